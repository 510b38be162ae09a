// ParseCommandLine: the scan, then each option's meaning, then the operands.
#include "cli/getopt_scan.h"
#include "cli/operands.h"
#include "cli/option_values.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  // A word that is no option fails the whole line, even after --help.
  Result<ScannedArgs> scanned = ScanArgs(args);
  if (!scanned.ok()) return scanned.status();

  CommandLine command_line;
  for (const OptionOccurrence& occurrence : scanned->options) {
    if (Status status = ApplyOption(occurrence, &command_line); !status.ok()) return status;
    if (command_line.action != Action::kCopy) return command_line;  // operands not needed
  }
  if (Status status = SetOperands(scanned->operands, &command_line.options); !status.ok()) {
    return status;
  }
  return command_line;
}

}  // namespace nbdcopy
