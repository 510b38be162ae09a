#include "cli/option_numbers.h"

#include "base/exact_size.h"
#include "base/size_text.h"

namespace nbdcopy {

std::string Quoted(std::string_view text) { return QuotedText(text); }

Result<uint64_t> ParseNumber(const std::string& text, uint64_t max) {
  if (IsNegativeNumberText(text)) return Status::Error("must not be negative: " + Quoted(text));
  uint64_t value;
  size_t used;
  bool fits = ParseDecimalPrefix(text, &value, &used);
  if (used == 0 || (fits && used != text.size())) {
    return Status::Error("not a number: " + Quoted(text));
  }
  if (!fits || value > max) {
    return Status::Error("number too large: " + Quoted(text) + " (maximum " + std::to_string(max) +
                         ")");
  }
  return value;
}

// The one size parser, shared with --ranges lists.
Result<uint64_t> ParseSize(const std::string& text) { return ParseSizeText(text); }

// Only the units ParseSize reads back.
std::string FormatSize(uint64_t bytes) { return FormatExactSize(bytes, "KMGT"); }

}  // namespace nbdcopy
