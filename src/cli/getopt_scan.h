// Splits argv into options and operands with glibc's getopt_long, which
// gives upstream nbdcopy's syntax: options anywhere, "--" ends them, "-C4"
// and "-vC 4" clusters, "--name=value" and "--name value" for required
// values, "--name=value" only for optional ones.
#ifndef NBDCOPY_CLI_GETOPT_SCAN_H_
#define NBDCOPY_CLI_GETOPT_SCAN_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// One option as it appeared on the command line.
struct OptionOccurrence {
  const OptionSpec* spec;
  // Unset for flags and for an optional value not given ("--progress").
  std::optional<std::string> value;
};

struct ScannedArgs {
  std::vector<OptionOccurrence> options;  // in command-line order
  std::vector<std::string> operands;      // in order, without the "--" marker
};

// Fails on the first word that is not an option, lacks its required value,
// or gives a value to an option that takes none; the message names it
// ("--bogus: unknown option"). Values are not checked here.
// Not thread-safe: getopt_long keeps its state in globals.
[[nodiscard]] Result<ScannedArgs> ScanArgs(const std::vector<std::string>& args);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_GETOPT_SCAN_H_
