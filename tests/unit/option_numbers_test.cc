#include "cli/option_numbers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/size_text.h"

namespace nbdcopy {
namespace {

TEST(OptionNumbersParseSizeTest, Accepts) {
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"0", 0},
      {"4096", 4096},
      {"4096B", 4096},
      {"4096b", 4096},
      {"32K", 32 * 1024},
      {"32k", 32 * 1024},
      {"32KB", 32 * 1024},
      {"32KiB", 32 * 1024},
      {"1m", 1 << 20},
      {"16M", 16 << 20},
      {"16MiB", 16 << 20},
      {"16mib", 16 << 20},
      {"1G", uint64_t{1} << 30},
      {"1gb", uint64_t{1} << 30},
      {"2T", uint64_t{2} << 40},
      {"007", 7},
      {"18446744073709551615", UINT64_MAX},
      {"16777215T", uint64_t{16777215} << 40},
  };
  for (const auto& [text, expected] : cases) {
    Result<uint64_t> size = ParseSize(text);
    ASSERT_TRUE(size.ok()) << text << ": " << size.status().message();
    EXPECT_EQ(*size, expected) << text;
  }
}

TEST(OptionNumbersParseSizeTest, Rejects) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty size"},
      {"abc", "not a size: 'abc'"},
      {"K", "not a size: 'K'"},
      {" 4", "not a size: ' 4'"},
      {"+4", "not a size: '+4'"},
      {"-1", "size must not be negative: '-1'"},
      {"-4K", "size must not be negative: '-4K'"},
      {"12X", "unknown size suffix 'X' in '12X' (use K, M, G or T)"},
      {"1iB", "unknown size suffix 'iB' in '1iB' (use K, M, G or T)"},
      {"1KK", "unknown size suffix 'KK' in '1KK' (use K, M, G or T)"},
      {"1 K", "unknown size suffix ' K' in '1 K' (use K, M, G or T)"},
      {"1.5M", "unknown size suffix '.5M' in '1.5M' (use K, M, G or T)"},
      {"99999999999999999999", "size too large: '99999999999999999999'"},
      {"18446744073709551616", "size too large: '18446744073709551616'"},
      {"99999999999G", "size too large: '99999999999G'"},
      {"16777216T", "size too large: '16777216T'"},
  };
  for (const auto& [text, message] : cases) {
    Result<uint64_t> size = ParseSize(text);
    ASSERT_FALSE(size.ok()) << text;
    EXPECT_EQ(size.status().message(), message) << text;
  }
}

TEST(OptionNumbersParseNumberTest, AcceptsPlainDecimalUpToMax) {
  EXPECT_EQ(*ParseNumber("0", 10), 0u);
  EXPECT_EQ(*ParseNumber("007", 10), 7u);
  EXPECT_EQ(*ParseNumber("10", 10), 10u);
  EXPECT_EQ(*ParseNumber("18446744073709551615", UINT64_MAX), UINT64_MAX);
}

TEST(OptionNumbersParseNumberTest, Rejects) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not a number: ''"},
      {"x", "not a number: 'x'"},
      {"4K", "not a number: '4K'"},
      {"+4", "not a number: '+4'"},
      {" 4", "not a number: ' 4'"},
      {"4 ", "not a number: '4 '"},
      {"-", "not a number: '-'"},
      {"-1", "must not be negative: '-1'"},
      {"11", "number too large: '11' (maximum 10)"},
      {"18446744073709551616", "number too large: '18446744073709551616' (maximum 10)"},
      {"99999999999999999999x", "number too large: '99999999999999999999x' (maximum 10)"},
  };
  for (const auto& [text, message] : cases) {
    Result<uint64_t> number = ParseNumber(text, 10);
    ASSERT_FALSE(number.ok()) << text;
    EXPECT_EQ(number.status().message(), message) << text;
  }
}

TEST(OptionNumbersFormatSizeTest, LargestExactUnit) {
  EXPECT_EQ(FormatSize(0), "0");
  EXPECT_EQ(FormatSize(4095), "4095");
  EXPECT_EQ(FormatSize(4096), "4K");
  EXPECT_EQ(FormatSize(1536 * 1024), "1536K");
  EXPECT_EQ(FormatSize(14 << 20), "14M");
  EXPECT_EQ(FormatSize(uint64_t{3} << 30), "3G");
  EXPECT_EQ(FormatSize(uint64_t{5} << 40), "5T");
  EXPECT_EQ(FormatSize(uint64_t{1} << 50), "1024T");  // no unit past T
}

TEST(OptionNumbersFormatSizeTest, ParseSizeReadsItBack) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{512}, uint64_t{65536},
                         uint64_t{14} << 20, uint64_t{1} << 62, UINT64_MAX}) {
    Result<uint64_t> parsed = ParseSize(FormatSize(bytes));
    ASSERT_TRUE(parsed.ok()) << FormatSize(bytes);
    EXPECT_EQ(*parsed, bytes);
  }
}

TEST(OptionNumbersQuotedTest, AddsSingleQuotes) {
  EXPECT_EQ(Quoted(""), "''");
  EXPECT_EQ(Quoted("a b"), "'a b'");
}

// The command line's ParseSize is the shared ParseSizeText, so --ranges
// lists and options read sizes alike (the cases above).
TEST(OptionNumbersParseSizeTest, IsTheSharedSizeTextParser) {
  for (std::string text : {"0", "4096", "32K", "32kib", "16MB", "1G", "2T", "", "-1", "abc", "12X",
                           "1 K", "0x10", "99999999999G", "18446744073709551616"}) {
    Result<uint64_t> cli = ParseSize(text), base = ParseSizeText(text);
    ASSERT_EQ(cli.ok(), base.ok()) << text;
    if (cli.ok()) {
      EXPECT_EQ(*cli, *base) << text;
    } else {
      EXPECT_EQ(cli.status().message(), base.status().message()) << text;
    }
  }
  EXPECT_EQ(ParseSizeText("0x10").status().message(),
            "unknown size suffix 'x10' in '0x10' (use K, M, G or T)");  // no hex on the CLI
}

}  // namespace
}  // namespace nbdcopy
