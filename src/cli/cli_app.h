// The option table as a CLI11 App, the one parser: CLI11 splits the words
// (options anywhere, "--", "-vC3" clusters, "--name=value" and "--name
// value" for required values, "--name=value" only for optional ones), and
// each option reaches a callback in command-line order, as getopt would
// hand it over.
#ifndef NBDCOPY_CLI_CLI_APP_H_
#define NBDCOPY_CLI_CLI_APP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/status.h"

namespace CLI {
class App;
}

namespace nbdcopy {

// One option as it appeared on the command line. value is unset for a
// flag and for an optional value not given ("--progress").
using OptionCallback =
    std::function<void(const OptionSpec& spec, const std::optional<std::string>& value)>;

// Every option of OptionTable(): its names, and whether it takes a value.
std::unique_ptr<CLI::App> MakeApp(OptionCallback on_option);

// Runs a MakeApp App over args (each App once) and returns the operand
// words, in order, without the "--" marker. Long options may be
// abbreviated as getopt_long allows (long_option_names.h). Fails on the
// first word that is no option, an ambiguous abbreviation, lacks its
// required value, or gives a value to an option that takes none
// ("--bogus: unknown option"); values are on_option's to judge. An unknown
// option inside a "[ CMD ARGS ]" before "--" gets a second line: the
// command line with the "--" it needs.
[[nodiscard]] Result<std::vector<std::string>> ParseWords(CLI::App& app,
                                                          const std::vector<std::string>& args);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_CLI_APP_H_
