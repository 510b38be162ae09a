// Numbers and sizes as option values write them, and sizes as --help shows
// them. Errors are one line, without the option's name: callers prefix it.
#ifndef NBDCOPY_CLI_OPTION_NUMBERS_H_
#define NBDCOPY_CLI_OPTION_NUMBERS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "nbdcopy/status.h"

namespace nbdcopy {

// A plain decimal number in [0, max]: no sign, spaces or suffix.
[[nodiscard]] Result<uint64_t> ParseNumber(const std::string& text, uint64_t max);

// Parses "4096", "32K", "16M", "1G" (binary multiples, case-insensitive,
// optional trailing "iB"/"B"). Rejects negative numbers, junk and overflow.
// This is ParseSizeText (base/size_text.h), which --ranges lists use too.
[[nodiscard]] Result<uint64_t> ParseSize(const std::string& text);

// The shortest form ParseSize reads back as bytes: "1M", "64K", "4095".
std::string FormatSize(uint64_t bytes);

// 'text', as every command-line message quotes what the user typed.
std::string Quoted(std::string_view text);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_OPTION_NUMBERS_H_
