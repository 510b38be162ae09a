#include "base/size_text.h"

#include <cctype>

#include "base/text_lexer.h"

namespace nbdcopy {
namespace {

constexpr std::string_view kUnits = "kmgt";  // K = 1 << 10, M = 1 << 20, ...

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

std::string QuotedText(std::string_view text) { return std::string("'").append(text).append("'"); }

bool ParseDecimalPrefix(std::string_view text, uint64_t* value, size_t* used) {
  const DigitRun run = ScanDigits(text, 10);
  *value = run.overflow ? 0 : run.value;
  *used = run.length;
  return !run.overflow;
}

bool IsNegativeNumberText(std::string_view text) {
  return text.size() > 1 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1]));
}

Result<uint64_t> ParseSizeText(std::string_view text) {
  if (text.empty()) return Status::Error("empty size");
  if (IsNegativeNumberText(text)) {
    return Status::Error("size must not be negative: " + QuotedText(text));
  }
  uint64_t value;
  size_t used;
  bool fits = ParseDecimalPrefix(text, &value, &used);
  if (used == 0) return Status::Error("not a size: " + QuotedText(text));
  if (!fits) return Status::Error("size too large: " + QuotedText(text));

  std::string suffix(text.substr(used));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = SuffixShift(suffix);
  if (shift < 0) {
    return Status::Error("unknown size suffix " + QuotedText(text.substr(used)) + " in " +
                         QuotedText(text) + " (use K, M, G or T)");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return Status::Error("size too large: " + QuotedText(text));
  }
  return value << shift;
}

}  // namespace nbdcopy
