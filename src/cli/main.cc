// The command-line boundary: argv in, exit code out. Everything else lives
// in nbdcopy_core and reports errors as Status values.
#include <libnbd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "endpoints/endpoint_spec.h"
#include "nbdcopy/cancel.h"
#include "nbdcopy/copy_job.h"
#include "nbdcopy/options.h"
#include "nbdcopy_version.h"

namespace nbdcopy {
namespace {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;

// Messages quote operands; an operand that merely looks like a URI with a
// password (a mistyped scheme is a file name) must not show it either.
// A message of several lines (an error and a hint) is several "nbdcopy: " lines.
int Fail(const Status& status) {
  std::string text = RedactPasswords(status.message());
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
    text.insert(at + 1, "nbdcopy: ");
  }
  std::fprintf(stderr, "nbdcopy: %s\n", text.c_str());
  return kExitFailure;
}

void Print(const std::string& text) { std::fputs(text.c_str(), stdout); }

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
    case Action::kCopy: {
      if (Status status = InstallCancelHandlers(); !status.ok()) return Fail(status);
      CopyOutcome outcome = ExecuteJob(command_line->options);
      if (!outcome.status.ok()) Fail(outcome.status);
      return outcome.exit_status;
    }
  }
  return kExitFailure;
}

}  // namespace
}  // namespace nbdcopy

int main(int argc, char** argv) { return nbdcopy::Main(argc, argv); }
