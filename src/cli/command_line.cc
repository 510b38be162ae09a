// ParseCommandLine: getopt_long's reading of the words (getopt_reading.h),
// which CLI11 then parses, applying each option as it comes; then the
// operands.
#include <CLI/CLI.hpp>
#include <algorithm>

#include "cli/getopt_reading.h"
#include "cli/option_table.h"
#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

using OptionCallback = std::function<void(const OptionSpec& spec, const OptionValue& value)>;

// The table as CLI11 options. CLI11 reads the line ReadAsGetoptLong makes
// exactly as getopt_long reads the one typed: long names in full, no
// "--name=", nothing after a flag but "={}", and the operands after "--",
// which come back in App::remaining().
std::unique_ptr<CLI::App> MakeApp(const OptionCallback& on_option) {
  auto app = std::make_unique<CLI::App>();
  app->set_help_flag();  // --help is ours, like every option
  app->allow_extras();   // the operands
  for (const OptionSpec& spec : OptionTable()) {
    std::string names = LongName(spec);
    if (!spec.alias.empty()) names += ",--" + std::string(spec.alias);
    if (spec.short_name != '\0') names += std::string(",-") + spec.short_name;
    const bool required = spec.arg == ArgKind::kRequired;
    // Without a required value, CLI11 passes "" for none ("--progress"),
    // else the value after "=" ("--progress=3"; "{}" is none to it too).
    CLI::callback_t callback = [&spec, required, on_option](const CLI::results_t& results) {
      const std::string& result = results.front();
      on_option(spec, required || !result.empty() ? result : OptionValue());
      return true;
    };
    // At each occurrence, not once at the end: command-line order decides.
    CLI::Option* option = app->add_option(names, callback)->trigger_on_parse();
    if (!required) option->expected(0, 0);  // "-p": no value; "--progress=FD": one
  }
  return app;
}

// The words grouped into operands, "[ CMD ARGS ... ]" being one. A stray
// "]" or an empty "[ ]" is left for ClassifyEndpoint to judge.
Status SetOperands(const std::vector<std::string>& words, Options* options) {
  std::vector<std::vector<std::string>> operands;
  for (auto word = words.begin(); word != words.end();) {
    const auto last = *word == "[" ? std::find(word, words.end(), "]") : word;
    if (last == words.end()) {
      return Status::Error(
          "'[' without a matching ']' (write '[ CMD ARGS ... ]' as separate words)");
    }
    operands.emplace_back(word, last + 1);
    word = last + 1;
  }
  if (operands.size() != 2) {
    const size_t count = operands.size();
    return Status::Error("expected SOURCE and DESTINATION, got " + std::to_string(count) +
                         (count == 1 ? " operand" : " operands") + " (try --help)");
  }
  options->source = std::move(operands[0]);
  options->destination = std::move(operands[1]);
  return Status::Ok();
}

}  // namespace

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  // A bad word anywhere on the line comes first, even after --help.
  Result<std::vector<std::string>> permuted = ReadAsGetoptLong(args);
  if (!permuted.ok()) return permuted.status();
  CommandLine command_line;
  Status value_error;
  // The first action ends the line, as upstream exits there; the first
  // bad value is the error.
  std::unique_ptr<CLI::App> app = MakeApp([&](const OptionSpec& spec, const OptionValue& value) {
    if (!value_error.ok() || command_line.action != Action::kCopy) return;
    if (Status status = spec.apply(value, &command_line); !status.ok()) {
      value_error = status.WithPrefix(LongName(spec));
    }
  });
  try {
    // CLI11 takes the words last first.
    app->parse(std::vector<std::string>(permuted->rbegin(), permuted->rend()));
  } catch (const CLI::ParseError& error) {
    // Not reached: CLI11 reads the permuted words as they are.
    return Status::Error(std::string("internal error: ") + error.what());
  }
  if (!value_error.ok()) return value_error;
  if (command_line.action != Action::kCopy) return command_line;  // operands not needed
  std::vector<std::string> operands = app->remaining();
  operands.erase(operands.begin());  // the "--" before them
  if (Status status = SetOperands(operands, &command_line.options); !status.ok()) return status;
  return command_line;
}

}  // namespace nbdcopy
