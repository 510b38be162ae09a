// Hands the image out to the copy loops in batches of operations, mapping
// it with the source's extents as it goes: the source is asked for one
// window at a time, so extents are fetched once per window, not once per
// request, and PlanOperations (op_planner.h) turns each answer into
// operations that obey the block-size rules.
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
#include "nbdcopy/op_planner.h"

namespace nbdcopy {

class WorkMap {
 public:
  // Zero operations are at most this long (lengths travel as 32-bit fields).
  static constexpr uint64_t kMaxZeroPiece = 1ULL << 30;

  // REQUIRES rules valid for PlanOperations; rules.image_size is the size.
  explicit WorkMap(const PlanRules& rules) : rules_(rules) {}

  // Appends to *pieces the next operations: zero operations met on the way
  // and data operations totalling at least batch_bytes (unless the image
  // ends first), in image order. When the map has run out, asks `source`
  // for the extents of the next window (or treats it all as data when
  // !use_extents). A failed or useless extents answer makes that range
  // data. Returns false when no work is left.
  // With rules.skip_clean, clean ranges are never handed out.
  bool TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                 std::deque<Extent>* pieces);

  // Bytes of clean ranges skipped so far (rules.skip_clean).
  uint64_t clean_bytes() {
    std::lock_guard lock(mutex_);
    return clean_bytes_;
  }

 private:
  static constexpr uint64_t kWindow = 1ULL << 30;

  void MapMore(Endpoint& source, bool use_extents);    // REQUIRES mutex_ held
  void MapWindow(Endpoint& source, bool use_extents);  // REQUIRES mutex_ held

  const PlanRules rules_;
  std::mutex mutex_;
  uint64_t cursor_ = 0;        // first offset not yet mapped; guarded by mutex_
  std::deque<Extent> mapped_;  // planned, not handed out; guarded by mutex_
  uint64_t clean_bytes_ = 0;   // guarded by mutex_
  std::vector<Extent> scratch_;
  std::vector<Extent> planned_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_WORK_MAP_H_
