// Hands the image out to the copy loops in batches of pieces, mapping
// it with the source's extents as it goes: the source is asked for one
// window at a time, so extents are fetched once per window, not once per
// request, and PlanPieces (piece_planner.h) turns each answer into
// pieces that obey the block-size rules.
//
// A map is worth asking for only where it lets the copy skip more reading
// than the map itself costs: a server describes each extent with work, and
// a window of many small extents (all of them shorter than
// rules.coalesce_below, so read anyway) costs it more than reading the
// window's bytes. With skip_costly_maps, the first window is small (16 MiB)
// and windows grow eightfold while their maps pay (each query stalls the
// asking worker). After a map that did not pay, the next stretch is copied
// without asking (as data: the caller's zero detection finds the holes), a
// stretch that doubles with every further map that does not pay, up to
// kMaxUnasked. One small window is asked after each stretch, so a change
// to large holes is seen within that bound.
//
// Thread safety: TakeBatch() may be called from any thread; the caller's own
// source connection answers the extents query, under the map's lock (held
// once per batch, never per request).
#ifndef NBDCOPY_WORK_MAP_H_
#define NBDCOPY_WORK_MAP_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "base/range_set.h"
#include "nbdcopy/endpoint.h"
#include "plan/piece_planner.h"

namespace nbdcopy {

class WorkMap {
 public:
  // The longest stretch copied without asking (skip_costly_maps): what a
  // change to large holes inside it can cost is reading this much.
  static constexpr uint64_t kMaxUnasked = 256ULL << 20;

  // What asking for extents cost and saved, for -v.
  struct Stats {
    uint64_t windows_asked = 0;  // extents queries
    uint64_t extents = 0;        // extents those answers held
    uint64_t bytes_unasked = 0;  // copied as data without a map (skip_costly_maps)
  };

  // REQUIRES rules valid for PlanPieces; rules.image_size is the size.
  // skip_costly_maps: may copy ranges without asking for their extents
  // (above); only for copies whose zero detection finds the holes again, and
  // never for an incremental copy (clean ranges come only with the map).
  // done (optional): ranges already copied (a checkpoint's) or not to be
  // copied (outside a --ranges list). Their whole blocks of rules.alignment
  // (and a short last block) are clean pieces, however the source
  // describes them: skipped, or handed out marked clean with
  // rules.describe_clean or rules.clean_as_zero.
  explicit WorkMap(const PlanRules& rules, bool skip_costly_maps = false,
                   const RangeSet* done = nullptr)
      : rules_(rules),
        skip_costly_maps_(skip_costly_maps),
        done_(done != nullptr ? std::optional<RangeSet>(
                                    done->AlignedInward(rules.alignment, rules.image_size))
                              : std::nullopt),
        window_(skip_costly_maps ? kFirstWindow : kWindow) {}

  // Appends to *pieces the next pieces: zero pieces met on the way
  // and data pieces totalling at least batch_bytes (unless the image
  // ends first), in image order. When the map has run out, asks `source`
  // for the extents of the next window (or treats it all as data when
  // !use_extents). A failed or useless extents answer makes that range
  // data. Returns false when no work is left.
  // With rules.skip_clean, clean ranges are never handed out (but with
  // rules.describe_clean, as pieces marked clean: to hash, not to write).
  bool TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                 std::deque<Extent>* pieces) EXCLUDES(mutex_);

  // --retry: ranges handed out before, to be copied again (as data pieces
  // marked redo); TakeBatch hands them out before anything else.
  // REQUIRES the ranges lie within the image and are aligned as pieces are.
  void Redo(const RangeSet& ranges) EXCLUDES(mutex_);
  bool has_redo() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return !redo_.empty();
  }

  Stats stats() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return stats_;
  }

  // Bytes of clean ranges skipped so far (rules.skip_clean).
  uint64_t clean_bytes() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return clean_bytes_;
  }

 private:
  static constexpr uint64_t kWindow = 1ULL << 30;
  static constexpr uint64_t kFirstWindow = 16ULL << 20;
  // What describing one extent costs a server, in bytes of reading it could
  // have done instead (nbdkit: about 1 us per extent against 0.15 ms per
  // MiB read; measured in docs/performance.md).
  static constexpr uint64_t kExtentCost = 4096;

  // Whether the map just made of [start, end), `extents` long, skipped
  // enough reading (zero_bytes) to pay for itself.
  bool MapPaid(uint64_t start, uint64_t end, size_t extents, uint64_t zero_bytes) const;

  void MapMore(Endpoint& source, bool use_extents) REQUIRES(mutex_);
  void MapWindow(Endpoint& source, bool use_extents) REQUIRES(mutex_);

  const PlanRules rules_;
  Mutex mutex_;
  uint64_t cursor_ GUARDED_BY(mutex_) = 0;        // first offset not yet mapped
  std::deque<Extent> mapped_ GUARDED_BY(mutex_);  // planned, not handed out
  uint64_t clean_bytes_ GUARDED_BY(mutex_) = 0;
  const bool skip_costly_maps_;
  const std::optional<RangeSet> done_;  // in whole blocks
  std::deque<Extent> redo_ GUARDED_BY(mutex_);
  uint64_t window_ GUARDED_BY(mutex_);           // the next window to ask for
  uint64_t unasked_ GUARDED_BY(mutex_) = 0;      // the next stretch copied without asking
  unsigned unpaid_maps_ GUARDED_BY(mutex_) = 0;  // maps in a row that did not pay
  Stats stats_ GUARDED_BY(mutex_);
  std::vector<Extent> scratch_ GUARDED_BY(mutex_);
  std::vector<Extent> planned_ GUARDED_BY(mutex_);
};

}  // namespace nbdcopy

#endif  // NBDCOPY_WORK_MAP_H_
