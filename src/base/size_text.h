// Sizes as people write them: "4096", "32K", "16MiB". The command line
// (cli/option_numbers) and --ranges lists (plan/range_list) read sizes
// through this one parser, so both accept exactly the same spellings.
// Errors are one line, without a prefix: callers add what was being read.
// Thread safety: pure functions.
#ifndef NBDCOPY_BASE_SIZE_TEXT_H_
#define NBDCOPY_BASE_SIZE_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nbdcopy/status.h"

namespace nbdcopy {

// Decimal digits with an optional binary multiple: K = 1 << 10, M, G, T,
// case-insensitive, optionally followed by "B" or "iB" ("32k", "32KB",
// "32KiB"; a bare "B" means bytes). No sign, spaces, fraction or hex.
// Errors: "empty size", "size must not be negative: '-1'", "not a size:
// 'abc'", "unknown size suffix 'X' in '12X' (use K, M, G or T)", "size too
// large: '...'" (over 2^64 - 1 bytes).
[[nodiscard]] Result<uint64_t> ParseSizeText(std::string_view text);

// Reads the decimal digits text starts with into *value and their count
// into *used (0 if text starts with none). Returns false if they overflow
// 64 bits. (base/text_lexer's ScanDigits in base 10.)
bool ParseDecimalPrefix(std::string_view text, uint64_t* value, size_t* used);

// True for "-1", "-5K": a minus sign then a digit, worth a clearer message
// than "not a number".
bool IsNegativeNumberText(std::string_view text);

// 'text', the way every message quotes what the user wrote.
std::string QuotedText(std::string_view text);

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_SIZE_TEXT_H_
