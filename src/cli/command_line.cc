// ParseCommandLine: CLI11 over the option table, each option's meaning as
// CLI11 meets it, then the operands.
#include <CLI/App.hpp>

#include "cli/cli_app.h"
#include "cli/operands.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine command_line;
  Status value_error;
  // The first action ends the line, as upstream exits there, and the first
  // bad value is kept rather than thrown: a bad word anywhere on the line
  // (ParseWords) is reported before it, even after --help.
  std::unique_ptr<CLI::App> app =
      MakeApp([&](const OptionSpec& spec, const std::optional<std::string>& value) {
        if (!value_error.ok() || command_line.action != Action::kCopy) return;
        // CLI11's disable_flag_override lets a flag's own value through ("--flush=true").
        if (spec.arg == ArgKind::kNone && value) {
          value_error = Status::Error(LongName(spec) + ": does not take a value");
        } else if (Status status = spec.apply(value, &command_line); !status.ok()) {
          value_error = status.WithPrefix(LongName(spec));
        }
      });
  Result<std::vector<std::string>> operands = ParseWords(*app, args);
  if (!operands.ok()) return operands.status();
  if (!value_error.ok()) return value_error;
  if (command_line.action != Action::kCopy) return command_line;  // operands not needed
  if (Status status = SetOperands(*operands, &command_line.options); !status.ok()) return status;
  return command_line;
}

}  // namespace nbdcopy
