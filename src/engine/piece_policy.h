// What becomes of the pieces the work map plans and of the data read for
// them: the one place both engines ask. Zero pieces and all-zero blocks of
// read data become zero operations, or nothing when the destination
// already reads as zeroes; the rest is written. Zero detection runs in
// plan.sparse_size blocks, only where the destination zeroes cheaply.
// With --allocated, when the source's extents say where its holes are
// (not --no-extents, and no map is skipped as costly under --allocated), a
// read is written as it was read, its zero blocks included, as libnbd's
// nbdcopy does (the destination ends up allocated either way, and one
// write replaces a write and a zero per zero block); only a read that is
// zero from end to end (a preallocated image's zeroes) becomes one
// allocated zero request instead of its bytes on the wire. Without
// extents, zero detection still keeps holes off the wire.
#ifndef NBDCOPY_ENGINE_PIECE_POLICY_H_
#define NBDCOPY_ENGINE_PIECE_POLICY_H_

#include <cstdint>
#include <span>

#include "base/zero_detect.h"
#include "engine/copy_stats.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/status.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

class PiecePolicy {
 public:
  PiecePolicy(const CopyPlan& plan, const EndpointInfo& destination)
      : skip_zeroes_(plan.skip_zero_ranges),
        whole_reads_(plan.allocated && plan.use_extents && !plan.skip_costly_maps),
        zero_granule_(destination.efficient_zero ? plan.sparse_size : 0) {}

  // A zero piece of the plan (a hole or zero extent of the source).
  RunAction ForZeroPiece() const { return skip_zeroes_ ? RunAction::kSkip : RunAction::kZero; }

  // Calls emit(run_offset, run, action) for each run of data read from the
  // source at offset, in order; stops at the first failure emit returns.
  template <typename Emit>
  Status ForEachRun(uint64_t offset, std::span<const std::byte> data, Emit&& emit) const {
    if (zero_granule_ == 0) return emit(offset, data, RunAction::kWrite);
    if (whole_reads_) return emit(offset, data, IsZero(data) ? ForZeroPiece() : RunAction::kWrite);
    return ForEachZeroRun(offset, data, zero_granule_,
                          [&](uint64_t run_offset, std::span<const std::byte> run, bool zero) {
                            return emit(run_offset, run, zero ? ForZeroPiece() : RunAction::kWrite);
                          });
  }

 private:
  const bool skip_zeroes_;
  const bool whole_reads_;       // --allocated: a read is one run, zero only if all of it is
  const uint64_t zero_granule_;  // 0: no zero detection
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_PIECE_POLICY_H_
