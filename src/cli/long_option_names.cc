#include "cli/long_option_names.h"

#include <algorithm>
#include <array>

namespace nbdcopy {
namespace {

// The names of libnbd's copy/main.c long_options[] (1.24).
constexpr std::array<std::string_view, 20> kUpstreamNames = {
    "help",        "long-options",        "allocated", "blkhash",       "blkhash-file",
    "connections", "destination-is-zero", "flush",     "no-extents",    "progress",
    "queue-size",  "request-size",        "requests",  "short-options", "sparse",
    "synchronous", "target-is-zero",      "threads",   "verbose",       "version",
};

// The spec whose name or alias is exactly name, or null.
const OptionSpec* Exact(std::span<const OptionSpec> table, std::string_view name) {
  for (const OptionSpec& spec : table) {
    if (spec.long_name == name || (!spec.alias.empty() && spec.alias == name)) return &spec;
  }
  return nullptr;
}

// getopt_long's search for abbreviations: every name that starts with
// prefix, a second name of an option already found adding nothing (getopt
// calls two entries with the same value and argument one option).
LongNameMatch Abbreviated(std::span<const OptionSpec> table,
                          std::span<const std::string_view> names, std::string_view prefix) {
  LongNameMatch match;
  std::vector<const OptionSpec*> found;
  for (std::string_view name : names) {
    const OptionSpec* spec = Exact(table, name);
    if (spec == nullptr || !name.starts_with(prefix)) continue;
    if (std::find(found.begin(), found.end(), spec) != found.end()) continue;
    found.push_back(spec);
    match.candidates.push_back(name);
  }
  if (found.size() == 1) {
    match.spec = found.front();
    match.name = match.candidates.front();
    match.candidates.clear();
  }
  std::sort(match.candidates.begin(), match.candidates.end());
  return match;
}

std::vector<std::string_view> OurNames(std::span<const OptionSpec> table) {
  std::vector<std::string_view> names;
  for (const OptionSpec& spec : table) {
    names.push_back(spec.long_name);
    if (!spec.alias.empty()) names.push_back(spec.alias);
  }
  return names;
}

bool IsLongOptionWord(const std::string& word) { return word.size() > 2 && word.starts_with("--"); }

bool IsShortOptionWord(const std::string& word) {
  return word.size() > 1 && word[0] == '-' && word[1] != '-';
}

// Walks the words as getopt_long would, to know which are option words.
class Speller {
 public:
  Speller(std::span<const OptionSpec> table, const std::vector<std::string>& args)
      : table_(table), args_(args) {}

  SpelledOutWords Run() {
    out_.refused_at = args_.size();
    size_t i = 0;
    for (; i < args_.size() && args_[i] != "--"; ++i) {
      if (in_brackets_ || args_[i] == "[") {
        Bracketed(args_[i]);
      } else if (IsLongOptionWord(args_[i])) {
        i = LongOption(i);
      } else if (IsShortOptionWord(args_[i])) {
        i = ShortOptions(i);
      } else {
        Operand(args_[i]);
      }
    }
    for (size_t rest = i; rest < args_.size(); ++rest) out_.words.push_back(args_[rest]);
    // Operands after "--" follow the ones before it, after the one marker;
    // a "--" inside "[ CMD ARGS ]" is the command's, kept.
    out_.with_end_marker.push_back("--");
    if (in_brackets_ && i < args_.size()) operands_.push_back("--");
    for (size_t rest = i + 1; rest < args_.size(); ++rest) operands_.push_back(args_[rest]);
    out_.with_end_marker.insert(out_.with_end_marker.end(), operands_.begin(), operands_.end());
    return std::move(out_);
  }

 private:
  void Operand(const std::string& word) {
    out_.words.push_back(word);
    operands_.push_back(word);
  }

  void Option(const std::string& word) {
    out_.words.push_back(word);
    out_.with_end_marker.push_back(word);
  }

  // "[" up to the first "]", as the operands are grouped.
  void Bracketed(const std::string& word) {
    if (word == "[") in_brackets_ = true;
    if (word == "]") in_brackets_ = false;
    if (word.size() > 1 && word[0] == '-') out_.bracketed_options.push_back(word);
    Operand(word);
  }

  // Returns the index of the last word the option took.
  size_t LongOption(size_t i) {
    const std::string& word = args_[i];
    const size_t equals = word.find('=');
    LongNameMatch match = MatchLongName(table_, std::string_view(word).substr(2, equals - 2));
    if (match.spec == nullptr) {
      if (!match.candidates.empty() && out_.refused_at == args_.size()) {
        out_.refused_at = out_.words.size();
        out_.refusal = Status::Error(AmbiguousMessage(word, match));
      }
      Option(word);
      return i;
    }
    Option("--" + std::string(match.name) +
           (equals == std::string::npos ? std::string() : word.substr(equals)));
    const bool takes_next = match.spec->arg == ArgKind::kRequired && equals == std::string::npos;
    return takes_next ? Value(i + 1) : i;
  }

  // "-vC3", "-vC 3": the letters up to the first that takes a value.
  size_t ShortOptions(size_t i) {
    const std::string& word = args_[i];
    Option(word);
    for (size_t letter = 1; letter < word.size(); ++letter) {
      auto has_letter = [&](const OptionSpec& spec) { return spec.short_name == word[letter]; };
      auto spec = std::find_if(table_.begin(), table_.end(), has_letter);
      if (spec == table_.end()) return i;  // unknown: the parse fails here
      if (spec->arg == ArgKind::kRequired) return letter + 1 == word.size() ? Value(i + 1) : i;
    }
    return i;
  }

  // The separate value at i, taken whatever it looks like.
  size_t Value(size_t i) {
    if (i < args_.size()) Option(args_[i]);
    return i;
  }

  std::span<const OptionSpec> table_;
  const std::vector<std::string>& args_;
  SpelledOutWords out_;
  std::vector<std::string> operands_;
  bool in_brackets_ = false;
};

}  // namespace

std::span<const std::string_view> UpstreamLongNames() { return kUpstreamNames; }

LongNameMatch MatchLongName(std::span<const OptionSpec> table, std::string_view name) {
  if (name.empty()) return {};
  if (const OptionSpec* spec = Exact(table, name); spec != nullptr) {
    return {.spec = spec,
            .name = name == spec->long_name ? spec->long_name : spec->alias,
            .candidates = {}};
  }
  LongNameMatch upstream = Abbreviated(table, kUpstreamNames, name);
  if (upstream.spec != nullptr) return upstream;
  return Abbreviated(table, OurNames(table), name);
}

std::string AmbiguousMessage(std::string_view word, const LongNameMatch& match) {
  std::string message = "option '" + std::string(word) + "' is ambiguous; possibilities:";
  for (std::string_view name : match.candidates) message += " '--" + std::string(name) + "'";
  return message;
}

SpelledOutWords SpellOutLongOptions(std::span<const OptionSpec> table,
                                    const std::vector<std::string>& args) {
  return Speller(table, args).Run();
}

}  // namespace nbdcopy
