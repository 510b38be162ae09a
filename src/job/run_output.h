// What a run writes besides the copy: a line to a file or stdout (the
// digest, --json, a dry run's answer) and an incremental copy's summary.
// Thread safety: one thread.
#ifndef NBDCOPY_JOB_RUN_OUTPUT_H_
#define NBDCOPY_JOB_RUN_OUTPUT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "base/file_system.h"
#include "job/report.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Writes one line, whole, to the file at `path` (created or truncated), or
// to stdout when there is none. `option` names the option in errors:
// "OPTION: PATH: <strerror>" ("stdout" for stdout); a short write is one.
[[nodiscard]] Status WriteLine(const std::string& option, const std::optional<std::string>& path,
                               const std::string& text, FileSystem& files = RealFileSystem());

// An incremental copy: the dirty size (what progress counts to), said on
// -v; for a dry run (null:), its whole answer. A resumed one (the plan
// skips what a checkpoint marks done) also measures, in *already, the dirty
// bytes done before.
// total_plan skips only what the copy leaves alone (clean, or left out of
// the list), plan also what the checkpoint marks done.
[[nodiscard]] Result<uint64_t> DirtyTotal(const Options& options, const CopyPlan& total_plan,
                                          const CopyPlan& plan, Endpoint& source, bool dry_run,
                                          RunReport* report, uint64_t* already);

// -v's last line of an incremental copy.
void PrintIncrementalStats(const Options& options, const RunReport& report);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_RUN_OUTPUT_H_
