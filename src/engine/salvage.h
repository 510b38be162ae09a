// --salvage: a read that failed because the source could not read its
// media is narrowed down to the sectors that fail, every other byte is
// copied, and what stays unreadable becomes zeroes in the buffer (so the
// copy, its digests and its checkpoints go on as for any read) and a lost
// range in the record the job reports (LostRanges). The engines reach it
// through their books (Bookkeeper::Rescue), only when a read failed.
//
// Narrowing is a bisection of the failed request, in sectors (the
// source's minimum block size, 512 bytes where it sets none): a half that
// reads is copied, a half that fails is split again, and a failed range of
// at most 8 sectors is scraped (each sector read alone). When the left
// half of a failed range reads, the right half is known to fail and is
// split without being read. Cost: about 2 log2(request / 8 sectors) + 8
// reads for an isolated bad sector (24 in a 1 MiB request), 1.25 reads a
// sector of a bad area. A lost range that touches the request's edge costs
// one read more, of the sector beyond (to know whether the range goes on
// into the next request, so that it is reported once, whole).
//
// Which failures are "unreadable" (IsUnreadable): EIO (an NBD error reply;
// a file's or device's I/O error), ENODATA (the block layer's medium
// error), EILSEQ (a protection-information mismatch), EBADMSG (a file
// system's checksum error). Everything else stays fatal: a lost
// connection (after --retry gave up), ENXIO, ENOMEM, EINVAL, timeouts, and
// any write, zero or flush failure.
// Thread safety: LostRanges may be used from any thread; SalvageRead uses
// the one source connection it is given, from its owner's thread.
#ifndef NBDCOPY_ENGINE_SALVAGE_H_
#define NBDCOPY_ENGINE_SALVAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "base/mutex.h"
#include "base/range_set.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// Whether a failed read is one --salvage narrows (the list above).
bool IsUnreadable(const Status& failed);

// The unreadable ranges found so far, and a line for each as it is found:
// "SOURCE: unreadable: offset N length L: REASON". Neighbouring ranges
// (a bad area spread over several requests, narrowed by several workers)
// are one line: a range is told once the bytes on both sides of it are
// known readable (or the image ends there), and at Finish whatever is left.
class LostRanges {
 public:
  using Notice = std::function<void(const std::string& line)>;
  LostRanges(std::string source_name, uint64_t image_size, Notice notice);

  // [offset, offset + length) is unreadable (error_number: why).
  // readable_before: the byte before offset is known readable (or offset
  // is 0); readable_after: likewise the byte at offset + length.
  void Add(uint64_t offset, uint64_t length, int error_number, bool readable_before,
           bool readable_after) EXCLUDES(mutex_);
  // Reads made to narrow failed requests (the cost of salvaging).
  void CountReads(uint64_t reads) EXCLUDES(mutex_);
  // The copy ended: ranges not told yet are told.
  void Finish() EXCLUDES(mutex_);

  RangeSet ranges() const EXCLUDES(mutex_);
  uint64_t reads() const EXCLUDES(mutex_);
  const std::string& source_name() const { return source_name_; }
  uint64_t image_size() const { return image_size_; }

 private:
  struct Pending {
    uint64_t end;
    int error_number;
    bool readable_before;
    bool readable_after;
  };
  void Tell(uint64_t offset, const Pending& run) REQUIRES(mutex_);

  const std::string source_name_;
  const uint64_t image_size_;
  const Notice notice_;
  mutable Mutex mutex_;
  RangeSet lost_ GUARDED_BY(mutex_);
  std::map<uint64_t, Pending> pending_ GUARDED_BY(mutex_);  // by offset: not told yet
  uint64_t reads_ GUARDED_BY(mutex_) = 0;
};

// The read of `buffer` at `offset` from `source` failed unreadable
// (IsUnreadable; error_number: its errno, the reason told): reads
// it again in smaller pieces (above) through source.Read, leaving the
// bytes read in the buffer and zeroes where none could be, which go into
// `lost`. Returns OK when the buffer now holds the rescued bytes, or the
// first failure of a read that is not unreadable (fatal, as without
// --salvage).
[[nodiscard]] Status SalvageRead(Endpoint& source, uint64_t offset, std::span<std::byte> buffer,
                                 int error_number, LostRanges& lost);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_SALVAGE_H_
