// The copy's settings, resolved from Options against the opened endpoints,
// and the checks that must pass before anything is written.
#ifndef NBDCOPY_COPY_PLAN_H_
#define NBDCOPY_COPY_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/range_set.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"
#include "plan/coverage.h"
#include "plan/piece_planner.h"

namespace nbdcopy {

struct CopyPlan {
  uint64_t request_size = 0;  // bytes per read/write, at most
  // The parallel engine adapts its request size in [min_request_size,
  // request_size] (equal when --request-size was given; 0 means request_size).
  uint64_t min_request_size = 0;
  uint64_t alignment = 1;       // every request starts and ends on a multiple (but at the end)
  uint64_t coalesce_below = 0;  // zero ranges shorter than this are copied as data
  uint64_t sparse_size = 0;     // zero-detection granularity; 0 = off
  uint64_t queue_size = 0;      // bytes of data in flight per worker
  unsigned connections = 1;     // workers, one connection each
  unsigned requests = 1;        // requests in flight per worker
  bool synchronous = true;
  bool use_extents = true;   // ask the source for extents
  bool zero_extents = true;  // its zero ranges become zero operations (not --no-extents)
  // Ranges whose extents cost more than they save may be copied without
  // asking (WorkMap); zero detection then finds their holes.
  bool skip_costly_maps = false;
  // Data may be cloned from the source (Endpoint::CloneRangeFrom) instead of
  // copied: not with --blkhash or --verify (the bytes must be read), --allocated (holes
  // inside data ranges must become allocated zeroes) or an incremental copy.
  bool clone_data = false;
  bool incremental = false;  // --dirty-bitmap: clean ranges are skipped, nothing else
  // What the copy covers, when not everything (plan/coverage.h): the work
  // map leaves its ranges alone or only hashes them, and the destination is
  // neither resized nor assumed to read as zero. nullptr: the whole image.
  std::shared_ptr<const Coverage> coverage;
  bool allocated = false;
  bool skip_zero_ranges = false;  // destination already reads as zero there
  bool flush = false;
  uint64_t rate = 0;  // --rate: source bytes read a second, all workers together; 0: no cap
  std::string notes;  // adjustments made to the options, for -v ("" when none)
};

// The planner's rules for an image of `size` bytes copied under `plan`.
PlanRules RulesFor(const CopyPlan& plan, uint64_t size);

// Resolves settings and refuses impossible copies (read-only or too small
// destination, block-size rules that no request size can meet) without
// writing anything. Block-size rules: requests are aligned to the larger
// minimum block size of the two endpoints (and the blkhash block), at least
// the larger preferred block size, and at most the smaller maximum.
// coverage: what the copy covers (nullptr, or one that is whole: the
// whole image).
Result<CopyPlan> MakeCopyPlan(const Options& options, const Endpoint& source,
                              const Endpoint& destination,
                              std::shared_ptr<const Coverage> coverage = nullptr);

// A plan that only reads and hashes an image (--verify, the source of an
// incremental copy hashed whole): the copy's request shape, parallelism and
// rate cap, nothing written or flushed, zero extents hashed as zeroes, and
// the coverage given (nullptr: every byte).
CopyPlan HashingPlan(const CopyPlan& copy, const EndpointInfo& image,
                     std::shared_ptr<const Coverage> coverage);

// Sizes a resizable destination to the source (the first change made to
// it) and decides whether zero ranges may be skipped. An incremental copy
// (plan->incremental) neither resizes nor skips zero ranges: the
// destination holds the previous copy, not zeroes.
Status PrepareDestination(const Options& options, const Endpoint& source, Endpoint& destination,
                          CopyPlan* plan);

// Multi-line summary for -v: endpoints, sizes, capabilities, settings.
std::string DescribeCopy(const CopyPlan& plan, const Endpoint& source, const Endpoint& destination);

}  // namespace nbdcopy

#endif  // NBDCOPY_COPY_PLAN_H_
