// What a run writes besides the copy: a line to a file or stdout (the
// digest, --json, a dry run's answer) and an incremental copy's summary.
// Thread safety: one thread.
#ifndef NBDCOPY_JOB_JOB_OUTPUT_H_
#define NBDCOPY_JOB_JOB_OUTPUT_H_

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
// -v; for a dry run (null:), its whole answer. *already: the dirty bytes a
// resumed copy's earlier runs did (the plan's coverage's done ranges).
[[nodiscard]] Result<uint64_t> DirtyTotal(const Options& options, const CopyPlan& plan,
                                          Endpoint& source, bool dry_run, JobReport* report,
                                          uint64_t* already);

// -v's last line of an incremental copy.
void PrintIncrementalStats(const Options& options, const JobReport& report);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_JOB_OUTPUT_H_
