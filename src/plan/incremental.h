// Incremental copies (--dirty-bitmap=NAME, --ranges=FILE): the rules
// around them. The copy itself is an ordinary one whose source marks
// unchanged ranges clean (NbdEndpoint with a dirty bitmap), which the
// planner skips (PlanRules::skip_clean), or whose coverage leaves out what a
// list does not name (plan/coverage.h); this unit measures the dirty part.
// (What an incremental copy refuses is job/option_checks'.)
#ifndef NBDCOPY_INCREMENTAL_H_
#define NBDCOPY_INCREMENTAL_H_

#include <cstdint>
#include <string>

#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// What an incremental copy under `plan` will do, after the planner's
// block-size rules: the bytes it copies (its progress total), in how many
// contiguous ranges, and the clean bytes it leaves alone; of the dirty
// bytes, those an earlier run copied already (the coverage's done ranges).
struct DirtySummary {
  uint64_t dirty_bytes = 0;
  uint64_t ranges = 0;
  uint64_t clean_bytes = 0;
  uint64_t done_bytes = 0;
};

// REQUIRES plan.incremental, finished for the source (FinishPlan). Walks the
// source's extents the way the copy will (the same WorkMap, its done ranges
// counted instead of skipped), reading no data. Fails only if cancelled.
Result<DirtySummary> SummarizeDirty(const CopyPlan& plan, Endpoint& source);

// "dirty=N ranges=M clean=K size=S": the dry run's line (null:
// destination) and, after "nbdcopy: dirty-bitmap=NAME: ", -v's.
std::string DescribeDirty(const DirtySummary& summary, uint64_t size);

}  // namespace nbdcopy

#endif  // NBDCOPY_INCREMENTAL_H_
