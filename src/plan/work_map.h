// Hands the image out to the copy loops in batches of pieces, mapping
// it with the source's extents as it goes: the source is asked for one
// window at a time, so extents are fetched once per window, not once per
// request, and PlanPieces (piece_planner.h) turns each answer into
// ranges that obey the block-size rules. It is the one place that decides
// each piece's kind (plan/piece.h): from what the source says, what the
// copy covers (plan/coverage.h) and what must be copied again.
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
// to large holes is seen within that bound. Into long holes, windows grow
// beyond the usual 1 GiB (kMaxHoleWindow), so that a sparse disk of many
// TiB is mapped in a few queries, not one per GiB.
//
// Thread safety: TakeBatch() may be called from any thread; the caller's own
// source connection answers the extents query, under the map's lock (held
// once per batch, never per request).
#ifndef NBDCOPY_WORK_MAP_H_
#define NBDCOPY_WORK_MAP_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "base/range_set.h"
#include "nbdcopy/endpoint.h"
#include "plan/coverage.h"
#include "plan/piece.h"
#include "plan/piece_planner.h"

namespace nbdcopy {

class WorkMap {
 public:
  // The longest stretch copied without asking (skip_costly_maps): what a
  // change to large holes inside it can cost is reading this much.
  static constexpr uint64_t kMaxUnasked = 256ULL << 20;
  // The usual extents window.
  static constexpr uint64_t kWindow = 1ULL << 30;
  // After an answer that ended in a hole (or clean range) of 1 GiB (the
  // usual window) or more, windows grow eightfold, up to LongestWindow():
  // a hole becomes zero pieces of at most rules.max_zero (1 GiB in a copy),
  // all held at once, so at most kMaxHolePieces of them, and never more
  // than kMaxHoleWindow (4 TiB).
  static constexpr uint64_t kMaxHoleWindow = 1ULL << 42;
  static constexpr uint64_t kMaxHolePieces = 4096;
  static uint64_t LongestWindow(const PlanRules& rules) {
    return std::max(kWindow, std::min(kMaxHoleWindow, rules.max_zero * kMaxHolePieces));
  }

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
  // coverage (optional: everything is copied): the whole blocks of
  // rules.alignment (and a short last block) of its unlisted and done
  // ranges are skipped or hashed as it says, however the source describes
  // them.
  explicit WorkMap(const PlanRules& rules, bool skip_costly_maps = false,
                   const Coverage* coverage = nullptr);

  // Appends to *pieces the next pieces: pieces that read nothing met on
  // the way and pieces that read totalling at least batch_bytes (unless the
  // image ends first), in image order. When the map has run out, asks
  // `source` for the extents of the next window (or treats it all as data
  // when !use_extents). A failed or useless extents answer makes that range
  // data. Returns false when no work is left.
  // With rules.skip_clean, ranges clean in the source's dirty bitmap are
  // never handed out.
  bool TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                 std::deque<Piece>* pieces) EXCLUDES(mutex_);

  // --retry: ranges handed out before, to be copied again (kCopyAgain
  // pieces); TakeBatch hands them out before anything else.
  // REQUIRES the ranges lie within the image and are aligned as pieces are.
  void CopyAgain(const RangeSet& ranges) EXCLUDES(mutex_);
  bool has_copy_again() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return !copy_again_.empty();
  }

  Stats stats() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return stats_;
  }

  // Bytes skipped so far: clean in the dirty bitmap (rules.skip_clean),
  // or unlisted or done and not hashed.
  uint64_t clean_bytes() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return clean_bytes_;
  }

 private:
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
  // The planned range as pieces, carved by the coverage; returns the bytes
  // of zero operations among them (what a map saves).
  uint64_t HandOut(const Extent& planned) REQUIRES(mutex_);
  // The kind of a part of `planned` inside the unlisted or done ranges;
  // nullopt: skipped.
  std::optional<PieceKind> CoveredKind(const Extent& planned, bool unlisted) const;

  const PlanRules rules_;
  Mutex mutex_;
  uint64_t cursor_ GUARDED_BY(mutex_) = 0;       // first offset not yet mapped
  std::deque<Piece> mapped_ GUARDED_BY(mutex_);  // planned, not handed out
  uint64_t clean_bytes_ GUARDED_BY(mutex_) = 0;
  const bool skip_costly_maps_;
  // The coverage's ranges, in whole blocks, and what becomes of them.
  const RangeSet unlisted_;
  const RangeSet done_;
  const bool hash_done_;
  const bool unlisted_as_zero_;
  std::deque<Piece> copy_again_ GUARDED_BY(mutex_);
  uint64_t window_ GUARDED_BY(mutex_);           // the next window to ask for
  uint64_t unasked_ GUARDED_BY(mutex_) = 0;      // the next stretch copied without asking
  unsigned unpaid_maps_ GUARDED_BY(mutex_) = 0;  // maps in a row that did not pay
  Stats stats_ GUARDED_BY(mutex_);
  std::vector<Extent> scratch_ GUARDED_BY(mutex_);
  std::vector<Extent> planned_ GUARDED_BY(mutex_);
};

}  // namespace nbdcopy

#endif  // NBDCOPY_WORK_MAP_H_
