// The command-line parser with arbitrary argv vectors (the input split at
// NUL bytes). Checks, beyond "no crash, no leak, no uncaught exception":
// - an accepted command line holds only values the options allow;
// - the operands are the input's words, in order, with "[ CMD ... ]"
//   grouped into one operand that ClassifyEndpoint accepts as a command;
// - an error is a non-empty message without the "nbdcopy: " prefix (main
//   adds it), never CLI11's refusal of the permuted line (an internal
//   error), and without a newline that no input word had;
// - every word goes through ParseSize too, compared with a reference
//   reading of "DIGITS[K|M|G|T][i][B]" written here independently.
#include <bit>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/option_numbers.h"
#include "endpoints/endpoint_spec.h"
#include "fuzz_check.h"
#include "nbdcopy/options.h"

namespace {

using namespace nbdcopy;

std::vector<std::string> SplitWords(const uint8_t* data, size_t size) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  if (!word.empty() || size == 0) words.push_back(word);
  return words;
}

std::optional<uint64_t> ReferenceSize(const std::string& text) {
  size_t i = 0;
  unsigned __int128 value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
    if (value > UINT64_MAX) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string suffix;
  for (; i < text.size(); ++i)
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  int shift;
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else {
    const std::string units = "kmgt";
    size_t unit = units.find(suffix[0]);
    std::string tail = suffix.substr(1);
    if (unit == std::string::npos || !(tail.empty() || tail == "b" || tail == "ib")) {
      return std::nullopt;
    }
    shift = 10 * static_cast<int>(unit + 1);
  }
  value <<= shift;
  if (value > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(value);
}

void CheckSize(const std::string& word) {
  Result<uint64_t> parsed = ParseSize(word);
  std::optional<uint64_t> expected = ReferenceSize(word);
  FUZZ_CHECK(parsed.ok() == expected.has_value(), "ParseSize('%s'): ok=%d, reference ok=%d",
             word.c_str(), parsed.ok(), expected.has_value());
  if (parsed.ok()) {
    FUZZ_CHECK(*parsed == *expected, "ParseSize('%s') = %llu, reference %llu", word.c_str(),
               static_cast<unsigned long long>(*parsed),
               static_cast<unsigned long long>(*expected));
  } else {
    FUZZ_CHECK(!parsed.status().message().empty(), "ParseSize('%s'): empty message", word.c_str());
  }
}

void CheckOperand(const std::vector<std::string>& words, Role role) {
  FUZZ_CHECK(!words.empty(), "empty operand");
  Result<EndpointSpec> spec = ClassifyEndpoint(words, role);
  if (words.front() != "[") {
    FUZZ_CHECK(words.size() == 1, "a plain operand of %zu words", words.size());
    if (spec.ok())
      FUZZ_CHECK(spec->kind != EndpointKind::kCommand, "'%s' read as a command", words[0].c_str());
    return;
  }
  FUZZ_CHECK(words.size() >= 2 && words.back() == "]", "unbalanced brackets in an operand");
  for (size_t i = 1; i + 1 < words.size(); ++i) {
    FUZZ_CHECK(words[i] != "]", "']' inside a command operand");
  }
  if (words.size() == 2) {
    FUZZ_CHECK(!spec.ok(), "'[ ]' accepted as a command");
    return;
  }
  FUZZ_CHECK(spec.ok() && spec->kind == EndpointKind::kCommand, "'[ CMD ]' not a command");
  FUZZ_CHECK(spec->argv == std::vector<std::string>(words.begin() + 1, words.end() - 1),
             "command argv differs from its words");
}

void CheckAccepted(const CommandLine& command_line, const std::vector<std::string>& args) {
  if (command_line.action != Action::kCopy) return;
  const Options& options = command_line.options;
  FUZZ_CHECK(std::has_single_bit(options.request_size) && options.request_size >= kMinRequestSize &&
                 options.request_size <= kMaxRequestSize,
             "request size %llu", static_cast<unsigned long long>(options.request_size));
  FUZZ_CHECK(options.sparse_size == 0 || (std::has_single_bit(options.sparse_size) &&
                                          options.sparse_size >= kMinSparseSize),
             "sparse size %llu", static_cast<unsigned long long>(options.sparse_size));
  FUZZ_CHECK(options.queue_size >= 1 && options.connections >= 1 && options.requests >= 1,
             "a zero count");
  FUZZ_CHECK(options.progress != ProgressMode::kFd || options.progress_fd >= 0, "negative fd");
  if (options.blkhash) {
    const uint64_t block = options.blkhash->block_size;
    FUZZ_CHECK(std::has_single_bit(block) && block <= kMaxRequestSize, "blkhash block %llu",
               static_cast<unsigned long long>(block));
  }
  CheckOperand(options.source, Role::kSource);
  CheckOperand(options.destination, Role::kDestination);
  // The operands' words appear in args, in order.
  std::vector<std::string> operand_words = options.source;
  operand_words.insert(operand_words.end(), options.destination.begin(), options.destination.end());
  size_t next = 0;
  for (const std::string& arg : args) {
    if (next < operand_words.size() && arg == operand_words[next]) ++next;
  }
  FUZZ_CHECK(next == operand_words.size(), "operand words not a subsequence of argv");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = SplitWords(data, size);
  Result<CommandLine> parsed = ParseCommandLine(args);
  if (parsed.ok()) {
    CheckAccepted(*parsed, args);
  } else {
    const std::string& message = parsed.status().message();
    FUZZ_CHECK(!message.empty(), "empty error message");
    FUZZ_CHECK(!message.starts_with("nbdcopy: "), "message carries main's prefix: %s",
               message.c_str());
    // CLI11 reads the line getopt_long's reading made without refusing it.
    FUZZ_CHECK(!message.starts_with("internal error: "), "%s", message.c_str());
    // One line, or two where the second is the hint for a "[ CMD ]"
    // written without "--" (getopt_reading.cc); more only from words that
    // hold a newline themselves.
    constexpr std::string_view kBracketHint =
        "\noptions of a bracketed command need '--' before the operands: nbdcopy ";
    std::string_view first = message;
    if (size_t hint = first.find(kBracketHint); hint != std::string_view::npos) {
      first = first.substr(0, hint);
    }
    if (first.find('\n') != std::string_view::npos) {
      bool input_had_newline = false;
      for (const std::string& arg : args) input_had_newline |= arg.find('\n') != std::string::npos;
      FUZZ_CHECK(input_had_newline, "multi-line message: %s", message.c_str());
    }
  }
  for (const std::string& word : args) CheckSize(word);
  return 0;
}
