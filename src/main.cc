// The command-line boundary: argv in, exit code out. Everything else lives
// in nbdcopy_core and reports errors as Status values.
#include <fcntl.h>
#include <libnbd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nbdcopy/copy_plan.h"
#include "nbdcopy/endpoint_spec.h"
#include "nbdcopy/open_endpoint.h"
#include "nbdcopy/options.h"
#include "nbdcopy/parallel_copy.h"
#include "nbdcopy/progress.h"
#include "nbdcopy/sync_copy.h"

namespace nbdcopy {
namespace {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;

int Fail(const Status& status) {
  std::fprintf(stderr, "nbdcopy: %s\n", status.message().c_str());
  return kExitFailure;
}

void Print(const std::string& text) { std::fputs(text.c_str(), stdout); }

// Copying a file onto itself would destroy it when the destination is
// truncated, before a single byte is read.
Status CheckNotSameFile(const EndpointSpec& source, const EndpointSpec& destination) {
  if (source.kind != EndpointKind::kLocalPath || destination.kind != EndpointKind::kLocalPath) {
    return Status::Ok();
  }
  struct stat a, b;
  if (stat(source.text.c_str(), &a) == 0 && stat(destination.text.c_str(), &b) == 0 &&
      S_ISREG(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
    return Status::Error(destination.text + ": source and destination are the same file");
  }
  return Status::Ok();
}

Status RunParallel(const CopyPlan& plan, const Options& options, Endpoint& source,
                   Endpoint& destination, Progress& progress) {
  CopyStats stats;
  Status status = ParallelCopy(plan, source, destination, progress, nullptr, &stats);
  if (options.verbose) {
    std::fprintf(stderr,
                 "nbdcopy: workers=%u max_requests_in_flight=%u max_bytes_in_flight=%llu "
                 "read=%llu written=%llu zeroed=%llu skipped=%llu\n",
                 stats.workers, stats.max_requests_in_flight,
                 static_cast<unsigned long long>(stats.max_bytes_in_flight),
                 static_cast<unsigned long long>(stats.bytes_read),
                 static_cast<unsigned long long>(stats.bytes_written),
                 static_cast<unsigned long long>(stats.bytes_zeroed),
                 static_cast<unsigned long long>(stats.bytes_skipped));
  }
  return status;
}

int Copy(const Options& options) {
  if (options.blkhash || options.blkhash_file) {
    return Fail(Status::Error("--blkhash: not implemented yet"));
  }
  if (options.progress == ProgressMode::kFd && fcntl(options.progress_fd, F_GETFD) == -1) {
    return Fail(Status::Error("--progress=" + std::to_string(options.progress_fd) +
                              ": not an open file descriptor"));
  }
  Result<EndpointSpec> source_spec = ClassifyEndpoint(options.source, Role::kSource);
  if (!source_spec.ok()) return Fail(source_spec.status());
  Result<EndpointSpec> destination_spec = ClassifyEndpoint(options.destination, Role::kDestination);
  if (!destination_spec.ok()) return Fail(destination_spec.status());
  if (Status status = CheckNotSameFile(*source_spec, *destination_spec); !status.ok()) {
    return Fail(status);
  }

  OpenFlags flags{.debug = options.verbose};
  // The source first: if it cannot be opened the destination is never touched.
  auto source = OpenEndpoint(*source_spec, Role::kSource, flags);
  if (!source.ok()) return Fail(source.status());
  auto destination = OpenEndpoint(*destination_spec, Role::kDestination, flags);
  if (!destination.ok()) return Fail(destination.status());

  Result<CopyPlan> plan = MakeCopyPlan(options, **source, **destination);
  if (!plan.ok()) return Fail(plan.status());
  if (Status status = PrepareDestination(options, **source, **destination, &*plan);
      !status.ok()) {
    return Fail(status);
  }
  if (options.verbose) std::fputs(DescribeCopy(*plan, **source, **destination).c_str(), stderr);

  Progress progress(options.progress, options.progress_fd, (*source)->info().size);
  progress.Start();
  Status status = plan->synchronous
                      ? SyncCopy(*plan, **source, **destination, progress)
                      : RunParallel(*plan, options, **source, **destination, progress);
  if (!status.ok()) return Fail(status);
  progress.Finish();
  return kExitSuccess;
}

// The libnbd version is the one loaded at run time, which needs a handle.
int PrintVersion() {
  nbd_handle* handle = nbd_create();
  if (handle == nullptr) return Fail(Status::Error(std::string("libnbd: ") + nbd_get_error()));
  Print(std::string("nbdcopy ") + NBDCOPY_VERSION + "\n" + "libnbd " + nbd_get_version(handle) +
        "\n");
  nbd_close(handle);
  return kExitSuccess;
}

int Main(int argc, char** argv) {
  Result<CommandLine> command_line =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!command_line.ok()) return Fail(command_line.status());
  switch (command_line->action) {
    case Action::kHelp:
      Print(HelpText());
      return kExitSuccess;
    case Action::kVersion:
      return PrintVersion();
    case Action::kLongOptions:
      Print(LongOptionsText());
      return kExitSuccess;
    case Action::kShortOptions:
      Print(ShortOptionsText());
      return kExitSuccess;
    case Action::kCopy:
      return Copy(command_line->options);
  }
  return kExitFailure;
}

}  // namespace
}  // namespace nbdcopy

int main(int argc, char** argv) { return nbdcopy::Main(argc, argv); }
