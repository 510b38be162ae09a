// The copy's settings, resolved from Options against the opened endpoints,
// and the checks that must pass before anything is written.
#ifndef NBDCOPY_COPY_PLAN_H_
#define NBDCOPY_COPY_PLAN_H_

#include <cstdint>
#include <string>

#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

struct CopyPlan {
  uint64_t request_size = 0;  // bytes per read/write
  uint64_t sparse_size = 0;   // zero-detection granularity; 0 = off
  uint64_t queue_size = 0;    // bytes of data in flight per worker
  unsigned connections = 1;   // workers, one connection each
  unsigned requests = 1;      // requests in flight per worker
  bool synchronous = true;
  bool use_extents = true;
  bool allocated = false;
  bool skip_zero_ranges = false;  // destination already reads as zero there
  bool flush = false;
};

// Resolves settings and refuses impossible copies (read-only or too small
// destination) without writing anything.
Result<CopyPlan> MakeCopyPlan(const Options& options, const Endpoint& source,
                              const Endpoint& destination);

// Sizes a resizable destination to the source (the first change made to
// it) and decides whether zero ranges may be skipped.
Status PrepareDestination(const Options& options, const Endpoint& source,
                          Endpoint& destination, CopyPlan* plan);

// Multi-line summary for -v: endpoints, sizes, capabilities, settings.
std::string DescribeCopy(const CopyPlan& plan, const Endpoint& source,
                         const Endpoint& destination);

}  // namespace nbdcopy

#endif  // NBDCOPY_COPY_PLAN_H_
