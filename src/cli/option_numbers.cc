#include "cli/option_numbers.h"

#include <cctype>

#include "base/exact_size.h"

namespace nbdcopy {
namespace {

constexpr std::string_view kUnits = "kmgt";  // K = 1 << 10, M = 1 << 20, ...

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

// The power of 2 a size suffix ("", "b", "k", "kb", "kib", ...; lower case)
// multiplies by, or -1 for anything else.
int SuffixShift(std::string_view suffix) {
  if (suffix.empty() || suffix == "b") return 0;
  size_t unit = kUnits.find(suffix[0]);
  if (unit == std::string_view::npos) return -1;
  std::string_view tail = suffix.substr(1);
  if (!tail.empty() && tail != "b" && tail != "ib") return -1;
  return 10 * static_cast<int>(unit + 1);
}

}  // namespace

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

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
  int shift = SuffixShift(suffix);
  if (shift < 0) {
    return Status::Error("unknown size suffix " + Quoted(text.substr(used)) + " in " +
                         Quoted(text) + " (use K, M, G or T)");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return Status::Error("size too large: " + Quoted(text));
  }
  return value << shift;
}

// Only the units ParseSize reads back.
std::string FormatSize(uint64_t bytes) { return FormatExactSize(bytes, "KMGT"); }

}  // namespace nbdcopy
