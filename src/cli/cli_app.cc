#include "cli/cli_app.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "base/shell_word.h"
#include "cli/long_option_names.h"

namespace nbdcopy {
namespace {

// "-C,--connections" as CLI11 takes names.
std::string CliNames(const OptionSpec& spec) {
  std::string names = LongName(spec);
  if (!spec.alias.empty()) names += ",--" + std::string(spec.alias);
  if (spec.short_name != '\0') names = std::string{'-', spec.short_name} + "," + names;
  return names;
}

// "--bogus=1: unknown option" -> "--bogus: ..."; "-xv" -> "-x: ..." (getopt
// stops at the first bad letter).
Status UnknownOption(const std::string& word) {
  std::string name = word[1] == '-' ? word.substr(0, word.find('=')) : word.substr(0, 2);
  return Status::Error(name + ": unknown option");
}

bool IsFlagLetter(const CLI::App& app, char letter) {
  const CLI::Option* option = app.get_option_no_throw(std::string{'-', letter});
  return option != nullptr && option->get_expected_max() == 0;
}

// Two words CLI11 misreads, refused rather than given to it:
// - "--name=": CLI11 takes the next word as the value (a flag ignores the
//   "="); getopt_long passes an empty value, refused here for every option.
// - "-v-", "-v-flush": CLI11 reads the rest of a cluster of flags as a word
//   of its own ("-v --", "-v --flush"); getopt_long reads that "-" as the
//   unknown option "-". After a letter that takes a value ("-C-1") the rest
//   is the value, for both.
Status MisreadWord(const CLI::App& app, const std::string& word) {
  if (word.starts_with("--") && word.find('=') == word.size() - 1) {
    const std::string name = word.substr(0, word.size() - 1);
    const CLI::Option* option = app.get_option_no_throw(name);
    if (option == nullptr) return UnknownOption(name);
    if (option->get_disable_flag_override()) return Status::Error(name + ": does not take a value");
    return Status::Error(name + ": missing value after '='");
  }
  const size_t dash = word.find('-', 1);
  if (word.size() > 1 && word[0] == '-' && word[1] != '-' && dash != std::string::npos &&
      std::all_of(word.begin() + 1, word.begin() + static_cast<ptrdiff_t>(dash),
                  [&app](char letter) { return IsFlagLetter(app, letter); })) {
    return Status::Error("--: unknown option");
  }
  return Status::Ok();
}

// CLI11 reports the two word errors it finds itself as ArgumentMismatch,
// naming the option first (CLI/Error.hpp): "allocated was given a
// disallowed flag override" for "--allocated=1" (disable_flag_override),
// "--connections: 1 required  missing" when the words end before a value:
// at the end of the line, or where a misread word, the value, was cut off.
Status WordError(const CLI::ParseError& error, const Status& misread) {
  const std::string text = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) == nullptr) return Status::Error(text);
  if (!text.starts_with("--")) {
    return Status::Error("--" + text.substr(0, text.find(' ')) + ": does not take a value");
  }
  if (!misread.ok()) return misread;
  return Status::Error(text.substr(0, text.find(':')) + ": requires a value");
}

// The words no option took: unknown options before the "--" that ends the
// options, the "--" itself, and the operands.
Result<std::vector<std::string>> OperandWords(const std::vector<std::string>& leftovers) {
  std::vector<std::string> words;
  bool options_ended = false;
  for (const std::string& word : leftovers) {
    if (!options_ended && word == "--") {
      options_ended = true;
    } else if (!options_ended && word.size() > 1 && word[0] == '-') {
      return UnknownOption(word);
    } else {
      words.push_back(word);
    }
  }
  return words;
}

// An unknown option that is a word of a "[ CMD ARGS ]" written without the
// "--" before the operands was meant for CMD: a second line says so, with
// the command line that works. The error stays the same error.
Status WithBracketHint(const Status& error, const SpelledOutWords& spelled) {
  for (const std::string& word : spelled.bracketed_options) {
    if (UnknownOption(word).message() != error.message()) continue;
    std::string line = "nbdcopy";
    for (const std::string& corrected : spelled.with_end_marker) line += " " + ShellWord(corrected);
    return Status::Error(error.message() +
                         "\noptions of a bracketed command need '--' before the operands: " + line);
  }
  return error;
}

}  // namespace

std::unique_ptr<CLI::App> MakeApp(OptionCallback on_option) {
  auto app = std::make_unique<CLI::App>();
  app->set_help_flag();  // --help is ours, like every option
  app->allow_extras();   // operands and unknown options come back in order
  for (const OptionSpec& spec : OptionTable()) {
    const bool required = spec.arg == ArgKind::kRequired;
    // A flag's result is empty unless "--name=value" gave one ("{}" is none).
    CLI::callback_t callback = [&spec, required, on_option](const CLI::results_t& results) {
      const std::string& result = results.front();
      if (on_option)
        on_option(spec, required || !result.empty() ? result : std::optional<std::string>());
      return true;
    };
    // At each occurrence, not once at the end: command-line order decides.
    CLI::Option* option = app->add_option(CliNames(spec), callback)->trigger_on_parse();
    if (!required) option->expected(0, 0);  // "-p": no value; "--progress=FD": one
    if (spec.arg == ArgKind::kNone) option->disable_flag_override();
  }
  return app;
}

Result<std::vector<std::string>> ParseWords(CLI::App& app, const std::vector<std::string>& typed) {
  // CLI11 meets full names only: "--thr=2" is "--threads=2" from here on.
  const SpelledOutWords spelled = SpellOutLongOptions(OptionTable(), typed);
  const std::vector<std::string>& args = spelled.words;
  // CLI11 reads the words before the first misread or ambiguous one (up to
  // the "--" that ends the options), so that a bad word before it comes first.
  size_t end = 0;
  Status misread;
  for (; end < args.size() && args[end] != "--"; ++end) {
    misread = MisreadWord(app, args[end]);
    if (!misread.ok()) break;
  }
  if (misread.ok()) end = args.size();
  if (spelled.refused_at < end) {
    end = spelled.refused_at;
    misread = spelled.refusal;
  }
  try {
    // CLI11 takes the words last first.
    app.parse(std::vector<std::string>(args.rend() - static_cast<ptrdiff_t>(end), args.rend()));
  } catch (const CLI::ParseError& error) {
    // CLI11 stops at the bad word; an unknown option before it comes first.
    Result<std::vector<std::string>> earlier = OperandWords(app.remaining());
    return WithBracketHint(earlier.ok() ? WordError(error, misread) : earlier.status(), spelled);
  }
  Result<std::vector<std::string>> operands = OperandWords(app.remaining());
  if (operands.ok() && !misread.ok()) return WithBracketHint(misread, spelled);
  if (!operands.ok()) return WithBracketHint(operands.status(), spelled);
  return operands;
}

}  // namespace nbdcopy
