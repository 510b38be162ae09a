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

// What a copy does, decided once: its settings (resolved from Options
// against the opened endpoints), then what the engines read, derived from
// the settings by FinishPlan. The engines take what they need from here and
// work nothing out again; nothing else of the options reaches them.
// The adaptive budget's usual gain over the bandwidth-delay product: the
// one place it is written (AdaptiveBudget::kGain is this).
inline constexpr double kUsualBudgetGain = 2.0;

struct CopyPlan {
  uint64_t request_size = 0;  // bytes per read/write, at most
  // The parallel engine adapts its request size in [min_request_size,
  // request_size] (equal when --request-size was given; a plan set by hand
  // may leave it 0: FinishPlan makes it request_size).
  uint64_t min_request_size = 0;
  uint64_t alignment = 1;       // every request starts and ends on a multiple (but at the end)
  uint64_t coalesce_below = 0;  // zero ranges shorter than this are copied as data
  uint64_t sparse_size = 0;     // zero-detection granularity; 0 = off
  // Bytes of data in flight per worker: one request at least (FinishPlan
  // raises it; MakeCopyPlan says so in notes).
  uint64_t queue_size = 0;
  // The parallel engine's budget over its bandwidth-delay product (see
  // engine/adaptive_budget.h); MakeCopyPlan doubles it into a served
  // destination (kServedDestinationGain).
  double budget_gain = kUsualBudgetGain;
  unsigned connections = 1;  // workers, one connection each
  unsigned requests = 1;     // requests in flight per worker
  bool synchronous = true;
  bool use_extents = true;   // ask the source for extents
  bool zero_extents = true;  // its zero ranges become zero operations (not --no-extents)
  // Ranges whose extents cost more than they save may be copied without
  // asking (WorkMap); zero detection then finds their holes. Not with
  // --allocated (PiecePolicy writes its reads whole).
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
  bool verbose = false;  // -v: the engine's statistics and --verify's digests on stderr
  std::string notes;     // adjustments made to the options, for -v ("" when none)

  // Derived by FinishPlan from the settings above; the engines read these.
  PlanRules rules;          // the planner's rules (WorkMap) for this image
  uint64_t batch_size = 0;  // data bytes a copy loop takes from the work map at a time
};

// Derives what the engines read (rules, batch_size, and min_request_size
// and queue_size as above) from a plan's settings, for an image of
// image_size bytes (0: a stream, copied without a work map). MakeCopyPlan
// and HashingPlan end with it; a plan whose settings are set by hand (the
// unit tests') must be finished so before an engine runs it.
void FinishPlan(uint64_t image_size, CopyPlan* plan);
// What the engines check first: an internal error unless `plan` was
// finished for the size of `source` (a sized one).
Status CheckFinishedFor(const CopyPlan& plan, const Endpoint& source);

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
// incremental copy hashed whole): the copy's plan with its request shape,
// parallelism, rate cap and verbosity, nothing written, zeroed, cloned or
// flushed, zero extents hashed as zeroes, in the parallel engine, over the
// coverage given (nullptr: every byte). image: the endpoint read (its size
// is the image's).
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
