#include "cli/getopt_reading.h"

#include <algorithm>

#include "base/shell_word.h"

namespace nbdcopy {
namespace {

LongNameMatch Exact(std::string_view name) {
  for (const OptionSpec& spec : OptionTable()) {
    if (name == spec.long_name || (!spec.alias.empty() && name == spec.alias)) {
      return {.spec = &spec,
              .name = name == spec.long_name ? spec.long_name : spec.alias,
              .candidates = {}};
    }
  }
  return {};
}

// getopt_long's search for abbreviations, among libnbd's options only or
// among all of ours: every option with a name that starts with prefix.
LongNameMatch Abbreviated(std::string_view prefix, bool upstream_only) {
  LongNameMatch match;
  const OptionSpec* last = nullptr;
  for (const OptionSpec& spec : OptionTable()) {
    if (upstream_only && !spec.upstream) continue;
    for (std::string_view name : {spec.long_name, spec.alias}) {
      if (name.empty() || !name.starts_with(prefix) || last == &spec) continue;
      last = &spec;
      match.spec = match.candidates.empty() ? &spec : nullptr;
      match.candidates.push_back(name);
    }
  }
  if (match.spec != nullptr) {
    match.name = match.candidates.front();
    match.candidates.clear();
  }
  std::ranges::sort(match.candidates);
  return match;
}

// glibc's words, with the word as typed: "option '--re=8' is ambiguous;
// possibilities: '--request-size' '--requests' '--retry'".
std::string AmbiguousMessage(std::string_view word, const LongNameMatch& match) {
  std::string message = "option '" + std::string(word) + "' is ambiguous; possibilities:";
  for (std::string_view name : match.candidates) message += " '--" + std::string(name) + "'";
  return message;
}

const OptionSpec* ShortOption(char letter) {
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.short_name == letter) return &spec;
  }
  return nullptr;
}

// Where a word of the command line goes in the permuted line.
enum class Role {
  kOption,  // an option word or its value
  kOperand,
  // An option word or its value inside "[ CMD ARGS ]": applied, as
  // getopt_long would, but left inside the brackets in the hint's line.
  kBracketedOption,
  kBracketedEnd,  // a "--" inside "[ CMD ARGS ]": the hint's line keeps it
};

// One pass over the words, in order, as getopt_long makes it.
class Reader {
 public:
  explicit Reader(const std::vector<std::string>& args) : args_(args) {}

  Result<std::vector<std::string>> Read() {
    while (next_ < args_.size()) {
      const std::string& word = args_[next_++];
      if (options_ended_) {
        Add(Role::kOperand, word);
      } else if (word == "--") {
        options_ended_ = true;
        if (in_brackets_) Add(Role::kBracketedEnd, word);
      } else if (word.size() > 2 && word.starts_with("--")) {
        LongOption(word);
      } else if (word.size() > 1 && word[0] == '-') {
        ShortOptions(word);
      } else {
        // From "[" to the first "]": one operand, a command and its words.
        if (word == "[") in_brackets_ = true;
        if (word == "]") in_brackets_ = false;
        Add(Role::kOperand, word);
      }
    }
    if (error_.ok()) return Permuted(false);
    if (!hint_) return error_;
    // The rest of the line was read on to complete this line.
    std::string line = "nbdcopy";
    for (const std::string& word : Permuted(true)) line.append(" ").append(ShellWord(word));
    return Status::Error(error_.message() +
                         "\noptions of a bracketed command need '--' before the operands: " + line);
  }

 private:
  struct Word {
    Role role;
    std::string text;
  };

  void Add(Role role, std::string text) { words_.push_back({role, std::move(text)}); }
  Role OptionRole() const { return in_brackets_ ? Role::kBracketedOption : Role::kOption; }

  // The first refusal is the error. An unknown option inside the brackets
  // was most likely meant for the command: the hint says so.
  void Refuse(std::string message, bool unknown = false) {
    if (!error_.ok()) return;
    error_ = Status::Error(std::move(message));
    hint_ = unknown && in_brackets_;
  }

  // "--name", "--name=value", "--name value"; abbreviated or not.
  void LongOption(const std::string& word) {
    const size_t equals = word.find('=');
    const std::string_view name = std::string_view(word).substr(2, equals - 2);
    // A command's option inside the brackets is more likely than one of
    // our abbreviations: there only full names are ours.
    const LongNameMatch match = in_brackets_ ? Exact(name) : MatchLongName(name);
    if (match.spec == nullptr) {
      const bool unknown = match.candidates.empty();
      Refuse(
          unknown ? "--" + std::string(name) + ": unknown option" : AmbiguousMessage(word, match),
          unknown);
      return Add(OptionRole(), word);
    }
    const std::string full = "--" + std::string(match.name);
    if (equals == std::string::npos) {
      Add(OptionRole(), full);
      if (match.spec->arg == ArgKind::kRequired) Value(full);
      return;
    }
    const std::string value = word.substr(equals + 1);
    if (match.spec->arg == ArgKind::kNone && value != "{}") {
      Refuse(full + ": does not take a value");
    } else if (value.empty()) {
      Refuse(full + ": missing value after '='");
    }
    Add(OptionRole(), full + "=" + value);
  }

  // "-vC3", "-vC 3": the letters up to the first that takes a value,
  // which takes the rest of the word or the next word.
  void ShortOptions(const std::string& word) {
    Add(OptionRole(), word);
    for (size_t at = 1; at < word.size(); ++at) {
      const OptionSpec* spec = ShortOption(word[at]);
      if (spec == nullptr) return Refuse(std::string{'-', word[at]} + ": unknown option", true);
      if (spec->arg != ArgKind::kRequired) continue;
      if (at + 1 == word.size()) Value(LongName(*spec));
      return;
    }
  }

  // The next word is the value, whatever it looks like.
  void Value(const std::string& option) {
    if (next_ == args_.size()) return Refuse(option + ": requires a value");
    Add(OptionRole(), args_[next_++]);
  }

  // The options (for the hint, those outside the brackets), "--", the
  // operands (for the hint, with the bracketed options and "--").
  std::vector<std::string> Permuted(bool for_hint) const {
    std::vector<std::string> line;
    for (const Word& word : words_) {
      if (word.role == Role::kOption || (!for_hint && word.role == Role::kBracketedOption)) {
        line.push_back(word.text);
      }
    }
    line.push_back("--");
    for (const Word& word : words_) {
      if (word.role == Role::kOperand || (for_hint && word.role != Role::kOption)) {
        line.push_back(word.text);
      }
    }
    return line;
  }

  const std::vector<std::string>& args_;
  size_t next_ = 0;
  bool options_ended_ = false;
  bool in_brackets_ = false;
  std::vector<Word> words_;
  Status error_;
  bool hint_ = false;
};

}  // namespace

LongNameMatch MatchLongName(std::string_view name) {
  if (name.empty()) return {};
  if (LongNameMatch exact = Exact(name); exact.spec != nullptr) return exact;
  if (LongNameMatch upstream = Abbreviated(name, true); upstream.spec != nullptr) return upstream;
  return Abbreviated(name, false);
}

Result<std::vector<std::string>> ReadAsGetoptLong(const std::vector<std::string>& args) {
  return Reader(args).Read();
}

}  // namespace nbdcopy
