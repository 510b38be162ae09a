#include "job/run_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "base/unique_fd.h"
#include "endpoints/open_endpoint.h"
#include "plan/incremental.h"

namespace nbdcopy {

Status WriteLine(const std::string& option, const std::optional<std::string>& path,
                 const std::string& text) {
  std::string line = text + "\n";
  if (!path) {
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() ||
        std::fflush(stdout) != 0) {
      return Status::FromErrno(option + ": stdout", errno);
    }
    return Status::Ok();
  }
  UniqueFd fd(open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kNewFileMode));
  if (!fd.valid() ||
      write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Status::FromErrno(option + ": " + *path, errno);
  }
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
                            bool dry_run, RunReport* report, uint64_t* already) {
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

void PrintIncrementalStats(const Options& options, const RunReport& report) {
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
