#include "nbdcopy/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <climits>
#include <map>
#include <string_view>

namespace nbdcopy {
namespace {

enum class Id {
  kHelp,
  kAllocated,
  kBlkhash,
  kBlkhashFile,
  kConnections,
  kDestinationIsZero,
  kDirtyBitmap,
  kFlush,
  kJson,
  kNoExtents,
  kProgress,
  kQueueSize,
  kRequestSize,
  kRequests,
  kSparse,
  kSynchronous,
  kTargetIsZero,
  kThreads,
  kTimeout,
  kVerbose,
  kVerify,
  kVersion,
  kLongOptions,
  kShortOptions,
};

// What the long form takes, as getopt_long says it (no_argument,
// required_argument, optional_argument). A short form takes a value only when
// the long form requires one: -p is a plain flag while --progress[=FD] is not.
enum class Arg { kNone, kRequired, kOptional };

struct OptionInfo {
  Id id;
  std::string_view long_name;  // without "--"
  char short_name;             // '\0': none
  Arg arg;
  bool listed;  // printed by --long-options
};

// In --long-options order, which also gives the --short-options order.
constexpr std::array<OptionInfo, 24> kOptionTable = {{
    {Id::kHelp, "help", '\0', Arg::kNone, true},
    {Id::kAllocated, "allocated", '\0', Arg::kNone, true},
    {Id::kBlkhash, "blkhash", '\0', Arg::kOptional, true},
    {Id::kBlkhashFile, "blkhash-file", '\0', Arg::kRequired, true},
    {Id::kConnections, "connections", 'C', Arg::kRequired, true},
    {Id::kDestinationIsZero, "destination-is-zero", '\0', Arg::kNone, true},
    {Id::kDirtyBitmap, "dirty-bitmap", '\0', Arg::kRequired, true},
    {Id::kFlush, "flush", '\0', Arg::kNone, true},
    {Id::kJson, "json", '\0', Arg::kOptional, true},
    {Id::kNoExtents, "no-extents", '\0', Arg::kNone, true},
    {Id::kProgress, "progress", 'p', Arg::kOptional, true},
    {Id::kQueueSize, "queue-size", '\0', Arg::kRequired, true},
    {Id::kRequestSize, "request-size", '\0', Arg::kRequired, true},
    {Id::kRequests, "requests", 'R', Arg::kRequired, true},
    {Id::kSparse, "sparse", 'S', Arg::kRequired, true},
    {Id::kSynchronous, "synchronous", '\0', Arg::kNone, true},
    {Id::kTargetIsZero, "target-is-zero", '\0', Arg::kNone, true},
    {Id::kThreads, "threads", 'T', Arg::kRequired, true},
    {Id::kTimeout, "timeout", '\0', Arg::kRequired, true},
    {Id::kVerbose, "verbose", 'v', Arg::kNone, true},
    {Id::kVerify, "verify", '\0', Arg::kNone, true},
    {Id::kVersion, "version", 'V', Arg::kNone, true},
    {Id::kLongOptions, "long-options", '\0', Arg::kNone, false},
    {Id::kShortOptions, "short-options", '\0', Arg::kNone, false},
}};

const OptionInfo* FindLong(std::string_view name) {
  for (const OptionInfo& info : kOptionTable) {
    if (info.long_name == name) return &info;
  }
  return nullptr;
}

const OptionInfo* FindShort(char name) {
  for (const OptionInfo& info : kOptionTable) {
    if (name != '\0' && info.short_name == name) return &info;
  }
  return nullptr;
}

bool ShortTakesValue(const OptionInfo& info) { return info.arg == Arg::kRequired; }

std::string LongName(const OptionInfo& info) { return "--" + std::string(info.long_name); }

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// CLI11 loses two distinctions getopt_long makes: "--x=" (an empty value) is
// read as "--x" and then takes the next word, and "--flag=value" is accepted.
// Walking the words the way getopt would catches both, plus an option missing
// its value at the end, with messages naming the option.
Status CheckGetoptSyntax(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (word.starts_with("--")) {
      size_t equals = word.find('=');
      const OptionInfo* info = FindLong(std::string_view(word).substr(2, equals - 2));
      if (info == nullptr) continue;  // reported as unknown after parsing
      if (equals == std::string::npos) {
        if (info->arg != Arg::kRequired) continue;
        if (i + 1 == args.size()) return Status::Error(LongName(*info) + ": requires a value");
        ++i;  // the value, whatever it looks like
      } else if (info->arg == Arg::kNone) {
        return Status::Error(LongName(*info) + ": does not take a value");
      } else if (equals + 1 == word.size()) {
        return Status::Error(LongName(*info) + ": missing value after '='");
      }
    } else if (word.size() > 1 && word[0] == '-') {
      for (size_t j = 1; j < word.size(); ++j) {
        const OptionInfo* info = FindShort(word[j]);
        if (info == nullptr) break;  // reported as unknown after parsing
        if (!ShortTakesValue(*info)) continue;
        if (j + 1 == word.size()) {  // "-C N": the value is the next word
          if (i + 1 == args.size()) return Status::Error(LongName(*info) + ": requires a value");
          ++i;
        }
        break;  // "-C4": the rest of the word is the value
      }
    }
  }
  return Status::Ok();
}

// Reads leading decimal digits. Returns false on overflow.
bool ParseDigits(std::string_view text, uint64_t* value, size_t* used) {
  *value = 0;
  *used = 0;
  while (*used < text.size() && std::isdigit(static_cast<unsigned char>(text[*used]))) {
    uint64_t digit = static_cast<uint64_t>(text[*used] - '0');
    if (*value > (UINT64_MAX - digit) / 10) return false;
    *value = *value * 10 + digit;
    ++*used;
  }
  return true;
}

// "-1", "-5K": worth a clearer message than "not a number".
bool IsNegativeNumber(std::string_view text) {
  return text.size() > 1 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1]));
}

// A plain decimal number in [0, max]; no sign, spaces or suffix.
Result<uint64_t> ParseNumber(const std::string& text, uint64_t max) {
  if (IsNegativeNumber(text)) return Status::Error("must not be negative: " + Quoted(text));
  uint64_t value;
  size_t used;
  bool fits = ParseDigits(text, &value, &used);
  if (used == 0 || (fits && used != text.size())) {
    return Status::Error("not a number: " + Quoted(text));
  }
  if (!fits || value > max) {
    return Status::Error("number too large: " + Quoted(text) + " (maximum " + std::to_string(max) +
                         ")");
  }
  return value;
}

Result<unsigned> ParseCount(const OptionInfo& info, const std::string& text, unsigned min) {
  Result<uint64_t> value = ParseNumber(text, UINT_MAX);
  if (!value.ok()) return value.status().WithPrefix(LongName(info));
  if (*value < min) {
    return Status::Error(LongName(info) + ": must be at least " + std::to_string(min));
  }
  return static_cast<unsigned>(*value);
}

Result<uint64_t> ParseSizeOption(const OptionInfo& info, const std::string& text) {
  Result<uint64_t> value = ParseSize(text);
  if (!value.ok()) return value.status().WithPrefix(LongName(info));
  return value;
}

Result<BlkhashSpec> ParseBlkhash(const std::string& text) {
  BlkhashSpec spec;
  size_t slash = text.find('/');
  spec.algorithm = text.substr(0, slash);
  static constexpr std::array<std::string_view, 4> kAlgorithms = {"md5", "sha1", "sha256",
                                                                  "sha512"};
  if (std::find(kAlgorithms.begin(), kAlgorithms.end(), spec.algorithm) == kAlgorithms.end()) {
    return Status::Error("--blkhash: unknown algorithm " + Quoted(spec.algorithm) +
                         " (expected md5, sha1, sha256 or sha512)");
  }
  if (slash == std::string::npos) return spec;
  std::string size_text = text.substr(slash + 1);
  Result<uint64_t> size = ParseSize(size_text);
  if (!size.ok()) return size.status().WithPrefix("--blkhash");
  if (!std::has_single_bit(*size)) {
    return Status::Error("--blkhash: block size must be a power of 2: " + Quoted(size_text));
  }
  if (*size > kMaxRequestSize) {
    return Status::Error("--blkhash: block size must be at most 32M: " + Quoted(size_text));
  }
  spec.block_size = *size;
  return spec;
}

// One option as it appeared on the command line. value is unset for flags
// and for --progress / --blkhash given without "=".
struct Occurrence {
  const OptionInfo* info;
  std::optional<std::string> value;
};

// Applies one option; called in command-line order, as getopt would see them.
// --help and friends only set the action: the caller stops at the first one,
// as upstream exits there.
Status Apply(const Occurrence& occurrence, CommandLine* command_line) {
  const OptionInfo& info = *occurrence.info;
  const std::string value = occurrence.value.value_or("");
  Options& options = command_line->options;
  switch (info.id) {
    case Id::kHelp:
      command_line->action = Action::kHelp;
      break;
    case Id::kVersion:
      command_line->action = Action::kVersion;
      break;
    case Id::kLongOptions:
      command_line->action = Action::kLongOptions;
      break;
    case Id::kShortOptions:
      command_line->action = Action::kShortOptions;
      break;
    case Id::kAllocated:
      options.allocated = true;
      break;
    case Id::kDestinationIsZero:
    case Id::kTargetIsZero:
      options.destination_is_zero = true;
      break;
    case Id::kFlush:
      options.flush = true;
      break;
    case Id::kNoExtents:
      options.extents = false;
      break;
    case Id::kSynchronous:
      options.synchronous = true;
      break;
    case Id::kVerbose:
      options.verbose = true;
      break;
    case Id::kVerify:
      options.verify = true;
      break;
    case Id::kBlkhashFile:
      options.blkhash_file = value;
      break;
    case Id::kJson:
      options.json = true;
      options.json_file = occurrence.value;  // a bare --json means stdout
      break;
    case Id::kDirtyBitmap:
      options.dirty_bitmap = value;
      break;
    case Id::kBlkhash: {
      if (!occurrence.value) {
        options.blkhash = BlkhashSpec();
        break;
      }
      Result<BlkhashSpec> spec = ParseBlkhash(value);
      if (!spec.ok()) return spec.status();
      options.blkhash = *spec;
      break;
    }
    case Id::kProgress: {
      // As upstream: a later bare -p/--progress keeps an FD given earlier.
      if (!occurrence.value) {
        if (options.progress == ProgressMode::kNone) options.progress = ProgressMode::kBar;
        break;
      }
      Result<uint64_t> fd = ParseNumber(value, INT_MAX);
      if (!fd.ok()) return fd.status().WithPrefix(LongName(info));
      options.progress = ProgressMode::kFd;
      options.progress_fd = static_cast<int>(*fd);
      break;
    }
    case Id::kConnections:
    case Id::kRequests:
    case Id::kThreads: {
      Result<unsigned> count = ParseCount(info, value, info.id == Id::kThreads ? 0 : 1);
      if (!count.ok()) return count.status();
      unsigned* field = info.id == Id::kConnections ? &options.connections
                        : info.id == Id::kRequests  ? &options.requests
                                                    : &options.threads;
      *field = *count;
      break;
    }
    case Id::kTimeout: {
      Result<uint64_t> seconds = ParseNumber(value, kMaxTimeout);
      if (!seconds.ok()) return seconds.status().WithPrefix(LongName(info));
      options.timeout = static_cast<unsigned>(*seconds);
      break;
    }
    case Id::kRequestSize: {
      Result<uint64_t> size = ParseSizeOption(info, value);
      if (!size.ok()) return size.status();
      if (!std::has_single_bit(*size) || *size < kMinRequestSize || *size > kMaxRequestSize) {
        return Status::Error("--request-size: must be a power of 2 from " +
                             std::to_string(kMinRequestSize) + " to " +
                             std::to_string(kMaxRequestSize));
      }
      options.request_size = *size;
      options.request_size_set = true;
      break;
    }
    case Id::kQueueSize: {
      Result<uint64_t> size = ParseSizeOption(info, value);
      if (!size.ok()) return size.status();
      if (*size == 0) return Status::Error("--queue-size: must be at least 1");
      options.queue_size = *size;
      break;
    }
    case Id::kSparse: {
      Result<uint64_t> size = ParseSizeOption(info, value);
      if (!size.ok()) return size.status();
      if (*size != 0 && (!std::has_single_bit(*size) || *size < kMinSparseSize)) {
        return Status::Error("--sparse: must be 0 or a power of 2 >= " +
                             std::to_string(kMinSparseSize));
      }
      options.sparse_size = *size;
      break;
    }
  }
  return Status::Ok();
}

// Runs CLI11 over args and lists the options seen, in order, and the words
// it did not take (operands, unknown options and the "--" marker, in order).
Status Tokenize(const std::vector<std::string>& args, std::vector<Occurrence>* occurrences,
                std::vector<std::string>* rest) {
  CLI::App app("", "nbdcopy");
  app.set_help_flag();  // --help is ours, like the rest
  app.allow_extras();
  // Every occurrence is kept in results() and replayed below, so repeats are fine.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  struct Registered {
    const OptionInfo* info;
    bool takes_value;  // false for flags, including -p
  };
  std::map<const CLI::Option*, Registered> registered;
  for (const OptionInfo& info : kOptionTable) {
    std::string names = LongName(info);
    if (info.short_name != '\0' && info.arg != Arg::kOptional) {
      names = std::string{'-', info.short_name} + "," + names;
    }
    if (info.arg == Arg::kRequired) {
      registered[app.add_option(names)] = {&info, true};
    } else if (info.arg == Arg::kOptional) {
      // A flag that also takes "--x=value" without eating the next word.
      // "{}" makes the bare form record an empty value.
      registered[app.add_flag(names + "{}")] = {&info, true};
      if (info.short_name != '\0') {
        registered[app.add_flag(std::string{'-', info.short_name})] = {&info, false};
      }
    } else {
      registered[app.add_flag(names)] = {&info, false};
    }
  }

  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 wants it reversed
  } catch (const CLI::Error& error) {
    return Status::Error(error.what());  // CheckGetoptSyntax should have caught it first
  }

  std::map<const CLI::Option*, size_t> seen;
  for (const CLI::Option* option : app.parse_order()) {
    const Registered& entry = registered.at(option);
    const std::string& result = option->results().at(seen[option]++);
    Occurrence occurrence{entry.info, std::nullopt};
    // An empty result is a bare --progress/--blkhash: CheckGetoptSyntax rejected "--x=".
    if (entry.takes_value && (entry.info->arg == Arg::kRequired || !result.empty())) {
      occurrence.value = result;
    }
    occurrences->push_back(std::move(occurrence));
  }
  *rest = app.remaining();
  return Status::Ok();
}

// Takes the unknown options and the "--" marker out of the leftover words.
Result<std::vector<std::string>> CollectOperands(const std::vector<std::string>& rest) {
  std::vector<std::string> words;
  bool options_ended = false;
  for (const std::string& word : rest) {
    if (!options_ended && word == "--") {
      options_ended = true;
    } else if (!options_ended && word.size() > 1 && word[0] == '-') {
      // "--bogus=1" -> "--bogus"; "-xv" -> "-x" (getopt stops at the first bad letter).
      std::string name = word[1] == '-' ? word.substr(0, word.find('=')) : word.substr(0, 2);
      return Status::Error(name + ": unknown option");
    } else {
      words.push_back(word);
    }
  }
  return words;
}

// Groups words into operands: "[ ... ]" is one operand, any other word is one.
Result<std::vector<std::vector<std::string>>> GroupOperands(const std::vector<std::string>& words) {
  std::vector<std::vector<std::string>> operands;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] != "[") {
      operands.push_back({words[i]});
      continue;
    }
    size_t close = i + 1;
    while (close < words.size() && words[close] != "]") ++close;
    if (close == words.size()) {
      return Status::Error(
          "'[' without a matching ']' (write '[ CMD ARGS ... ]' as separate words)");
    }
    operands.emplace_back(words.begin() + i, words.begin() + close + 1);
    i = close;
  }
  return operands;
}

}  // namespace

Result<uint64_t> ParseSize(const std::string& text) {
  if (text.empty()) return Status::Error("empty size");
  if (IsNegativeNumber(text)) return Status::Error("size must not be negative: " + Quoted(text));
  uint64_t value;
  size_t used;
  bool fits = ParseDigits(text, &value, &used);
  if (used == 0) return Status::Error("not a size: " + Quoted(text));
  if (!fits) return Status::Error("size too large: " + Quoted(text));

  std::string suffix = text.substr(used);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = -1;
  static constexpr std::string_view kMultipliers = "kmgt";
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else if (size_t unit = kMultipliers.find(suffix[0]); unit != std::string_view::npos) {
    std::string_view tail = std::string_view(suffix).substr(1);
    if (tail.empty() || tail == "b" || tail == "ib") shift = 10 * static_cast<int>(unit + 1);
  }
  if (shift < 0) {
    return Status::Error("unknown size suffix " + Quoted(text.substr(used)) + " in " +
                         Quoted(text) + " (use K, M, G or T)");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return Status::Error("size too large: " + Quoted(text));
  }
  return value << shift;
}

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  if (Status syntax = CheckGetoptSyntax(args); !syntax.ok()) return syntax;
  std::vector<Occurrence> occurrences;
  std::vector<std::string> rest;
  if (Status status = Tokenize(args, &occurrences, &rest); !status.ok()) return status;
  Result<std::vector<std::string>> words = CollectOperands(rest);
  if (!words.ok()) return words.status();

  CommandLine command_line;
  for (const Occurrence& occurrence : occurrences) {
    if (Status status = Apply(occurrence, &command_line); !status.ok()) return status;
    if (command_line.action != Action::kCopy) return command_line;
  }

  Result<std::vector<std::vector<std::string>>> operands = GroupOperands(*words);
  if (!operands.ok()) return operands.status();
  if (operands->size() != 2) {
    size_t count = operands->size();
    return Status::Error("expected SOURCE and DESTINATION, got " + std::to_string(count) +
                         (count == 1 ? " operand" : " operands") + " (try --help)");
  }
  command_line.options.source = std::move((*operands)[0]);
  command_line.options.destination = std::move((*operands)[1]);
  return command_line;
}

std::string HelpText() {
  return R"(Usage: nbdcopy [OPTION...] SOURCE DESTINATION
Copy a disk image between NBD servers, files, block devices and pipes.
  SOURCE, DESTINATION := - | FILE | DEVICE | NBD-URI | [ CMD ARGS ... ]
  DESTINATION += null:      (put "--" before a "[ CMD ARGS ... ]" operand)

Copy:
  --allocated              write zeroes as allocated, never punch holes
  --destination-is-zero, --target-is-zero
                           the destination already reads as zeroes
  --dirty-bitmap=NAME      incremental: copy what qemu dirty bitmap NAME marks
                           changed onto an existing copy (null: a dry run)
  --flush                  flush the destination before exiting
  --no-extents             do not ask the source where its holes are
  --timeout=SECONDS        give up on an NBD server silent for SECONDS while
                           requests wait (300; 0: wait forever)
  -S N, --sparse=N         zero-detection granularity, 0: off (4096)
Performance:
  -C N, --connections=N    NBD connections when both ends allow it (4)
  -T N, --threads=N        worker threads (number of CPUs)
  -R N, --requests=N       requests in flight per connection (64)
  --request-size=N         bytes per request, a power of 2, 4K to 32M (1M)
  --queue-size=N           data bytes in flight per worker (14M)
  --synchronous            one thread, one request at a time
Checksums:
  --blkhash[=ALGO[/SIZE]]  print the source's blkhash; ALGO: md5, sha1,
                           sha256 or sha512 (sha256/64K)
  --blkhash-file=FILE      write the checksum to FILE, not stdout
  --verify                 read the destination back, compare checksums
Output:
  -p, --progress           progress on stderr: a bar on a terminal
  --progress=FD            "N/100" lines on file descriptor FD
  --json[=FILE]            a JSON report at the end, on stdout or in FILE
  -v, --verbose            settings, statistics and debug on stderr
  --help, -V, --version, --long-options, --short-options

Sizes take K, M, G or T (powers of 1024). More, and examples: man nbdcopy
)";
}

std::string LongOptionsText() {
  std::string text;
  for (const OptionInfo& info : kOptionTable) {
    if (info.listed) text += LongName(info) + "\n";
  }
  return text;
}

std::string ShortOptionsText() {
  std::string text;
  for (const OptionInfo& info : kOptionTable) {
    if (info.short_name != '\0') text += std::string{'-', info.short_name} + "\n";
  }
  return text;
}

}  // namespace nbdcopy
