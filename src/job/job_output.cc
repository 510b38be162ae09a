#include "job/job_output.h"

#include <algorithm>
#include <cstdio>

#include "plan/incremental.h"

namespace nbdcopy {

Status WriteLine(const std::string& option, const std::optional<std::string>& path,
                 const std::string& text, FileSystem& files) {
  const std::string line = text + "\n";
  const FileError error = path ? files.WriteWhole(*path, line) : files.WriteStandardOutput(line);
  if (error.failed())
    return Status::FromErrno(option + ": " + (path ? *path : "stdout"), error.error);
  return Status::Ok();
}

namespace {

// How -v lines name the incremental copy: "dirty-bitmap=NAME" or "ranges=FILE".
std::string IncrementalLabel(const Options& options) {
  return options.dirty_bitmap ? "dirty-bitmap=" + *options.dirty_bitmap
                              : "ranges=" + options.ranges.value_or("");
}

}  // namespace

Result<uint64_t> DirtyTotal(const Options& options, const CopyPlan& plan, Endpoint& source,
                            bool dry_run, JobReport* report, uint64_t* already) {
  Result<DirtySummary> summary = SummarizeDirty(plan, source);
  if (!summary.ok()) return summary.status();
  *already = summary->done_bytes;
  report->dirty = *summary;
  std::string line = DescribeDirty(*summary, *report->size);
  if (dry_run) {
    if (options.json && !options.json_file) return summary->dirty_bytes;  // the report says it
    Status status =
        WriteLine(options.dirty_bitmap ? "--dirty-bitmap" : "--ranges", std::nullopt, line);
    if (!status.ok()) return status;
    return summary->dirty_bytes;
  }
  if (options.verbose) {
    std::fprintf(stderr, "nbdcopy: %s: %s\n", IncrementalLabel(options).c_str(), line.c_str());
  }
  return summary->dirty_bytes;
}

void PrintIncrementalStats(const Options& options, const JobReport& report) {
  const CopyStats& stats = report.stats;
  std::fprintf(stderr,
               "nbdcopy: %s: read=%llu written=%llu zeroed=%llu "
               "left alone (clean)=%llu\n",
               IncrementalLabel(options).c_str(), static_cast<unsigned long long>(stats.bytes_read),
               static_cast<unsigned long long>(stats.bytes_written),
               static_cast<unsigned long long>(stats.bytes_zeroed),
               static_cast<unsigned long long>(report.dirty->clean_bytes));
}

}  // namespace nbdcopy
