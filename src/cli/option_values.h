// What each option means: checks its value and sets it in the CommandLine.
#ifndef NBDCOPY_CLI_OPTION_VALUES_H_
#define NBDCOPY_CLI_OPTION_VALUES_H_

#include <optional>
#include <string>

#include "cli/option_table.h"
#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// Applies one option, as the parser found it; called in command-line order,
// so a later value wins, and every value is checked. --help and the other
// actions only set command_line->action: the caller stops there, as upstream
// exits there. Errors name the option: "--sparse: must be 0 or ...".
// given is unset for a flag and for an optional value not given ("--progress").
[[nodiscard]] Status ApplyOption(const OptionSpec& spec, const std::optional<std::string>& given,
                                 CommandLine* command_line);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_OPTION_VALUES_H_
