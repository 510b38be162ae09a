// Hands the image out to the copy loops in batches, mapping it with the
// source's extents as it goes: the map is asked for one window at a time,
// so extents are fetched once per window, not once per request, and a huge
// hole costs a few operations.
//
// Thread safety: TakeBatch() may be called from any thread; the caller's own
// source connection answers the extents query, under the map's lock (held
// once per batch, never per request).
#ifndef NBDCOPY_WORK_MAP_H_
#define NBDCOPY_WORK_MAP_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

class WorkMap {
 public:
  // Zero pieces are at most this long (lengths travel as 32-bit fields).
  static constexpr uint64_t kMaxZeroPiece = 1ULL << 30;

  // block_size > 0: zero ranges are shrunk to whole blocks of that size
  // (a partly zero block is data), as blkhash needs; the image's short last
  // block may still be zero. REQUIRES block_size is 0 or a power of 2.
  WorkMap(uint64_t size, uint64_t block_size) : size_(size), block_size_(block_size) {}

  // Appends to *pieces the next work: zero pieces met on the way and data
  // extents totalling up to batch_bytes, in image order. When the map has
  // run out, asks `source` for the extents of the next window (or treats it
  // all as data when !use_extents). A failed or useless extents answer makes
  // that range data. Returns false when no work is left.
  bool TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                 std::deque<Extent>* pieces);

 private:
  static constexpr uint64_t kWindow = 1ULL << 30;

  void MapMore(Endpoint& source, bool use_extents);  // REQUIRES mutex_ held
  void AlignToBlocks(std::vector<Extent>* extents) const;
  void Append(const Extent& extent);  // merges with the last like extent

  const uint64_t size_;
  const uint64_t block_size_;
  std::mutex mutex_;
  uint64_t cursor_ = 0;        // first offset not yet mapped; guarded by mutex_
  std::deque<Extent> mapped_;  // mapped, not handed out; guarded by mutex_
  std::vector<Extent> scratch_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_WORK_MAP_H_
