#include "base/text_lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace nbdcopy {
namespace {

std::vector<std::pair<size_t, std::string>> AllLines(std::string_view text) {
  std::vector<std::pair<size_t, std::string>> out;
  TextLines lines(text);
  for (std::string_view line; lines.Next(&line);) out.emplace_back(lines.number(), line);
  return out;
}

TEST(TextLexerTest, LinesAreNumberedAndTheLastNewlineStartsNone) {
  using Lines = std::vector<std::pair<size_t, std::string>>;
  EXPECT_EQ(AllLines(""), Lines{});
  EXPECT_EQ(AllLines("\n"), (Lines{{1, ""}}));
  EXPECT_EQ(AllLines("a\r\n\nb"), (Lines{{1, "a\r"}, {2, ""}, {3, "b"}}));
  EXPECT_EQ(AllLines("a\n"), (Lines{{1, "a"}}));
  TextLines none("");
  EXPECT_EQ(none.number(), 0u);
}

TEST(TextLexerTest, BlanksAreTheFormatsOwn) {
  EXPECT_EQ(TrimBlanks(" \t a b\r ", kLineBlanks), "a b");
  EXPECT_EQ(TrimBlanks("\va\f", kLineBlanks), "\va\f");
  EXPECT_EQ(TrimBlanks("\va\f", kAllLineBlanks), "a");
  EXPECT_EQ(TrimBlanks(" \t ", kLineBlanks), "");
  EXPECT_EQ(SplitWords("  0x0  1\t+ \r", kLineBlanks),
            (std::vector<std::string_view>{"0x0", "1", "+"}));
  EXPECT_TRUE(SplitWords(" \t\r", kLineBlanks).empty());
}

TEST(TextLexerTest, CommentsStartAnywhereOrAfterABlank) {
  EXPECT_EQ(BeforeComment("0 1#x", CommentStart::kAnywhere, kLineBlanks), "0 1");
  EXPECT_EQ(BeforeComment("0 1#x", CommentStart::kAfterBlank, kLineBlanks), "0 1#x");
  EXPECT_EQ(BeforeComment("0 1\t# x", CommentStart::kAfterBlank, kLineBlanks), "0 1\t");
  EXPECT_EQ(BeforeComment("# all", CommentStart::kAfterBlank, kLineBlanks), "");
  EXPECT_EQ(BeforeComment("none", CommentStart::kAnywhere, kLineBlanks), "none");
}

TEST(TextLexerTest, ScannerTakesWordsUpToBlanksAndStops) {
  FieldScanner scanner(" 1M ,\t64K ", kLineBlanks);
  scanner.SkipBlanks();
  EXPECT_EQ(scanner.TakeWord(","), "1M");
  scanner.SkipBlanks();
  EXPECT_TRUE(scanner.Take(','));
  EXPECT_FALSE(scanner.Take(','));
  scanner.SkipBlanks();
  EXPECT_EQ(scanner.TakeWord(","), "64K");
  EXPECT_FALSE(scanner.AtEnd());
  scanner.SkipBlanks();
  EXPECT_TRUE(scanner.AtEnd());
  EXPECT_EQ(scanner.TakeWord(), "");
}

TEST(TextLexerTest, DigitRunsCountPastAnOverflow) {
  DigitRun run = ScanDigits("1234z", 10);
  EXPECT_EQ(run.value, 1234u);
  EXPECT_EQ(run.length, 4u);
  EXPECT_FALSE(run.overflow);
  run = ScanDigits("fFfFfFfFfFfFfFfF", 16);
  EXPECT_EQ(run.value, UINT64_MAX);
  EXPECT_FALSE(run.overflow);
  run = ScanDigits("10000000000000000g", 16);
  EXPECT_TRUE(run.overflow);
  EXPECT_EQ(run.length, 17u);
  EXPECT_TRUE(ScanDigits("18446744073709551616", 10).overflow);
  EXPECT_FALSE(ScanDigits("18446744073709551615", 10).overflow);
  EXPECT_EQ(ScanDigits("78", 8).length, 1u);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
}

TEST(TextLexerTest, NumbersInCppSyntax) {
  uint64_t value = 0;
  EXPECT_EQ(ParseUnsignedNumber("0x1F", false, &value), NumberStatus::kOk);
  EXPECT_EQ(value, 31u);
  EXPECT_EQ(ParseUnsignedNumber("0X1f", false, &value), NumberStatus::kOk);
  EXPECT_EQ(value, 31u);
  EXPECT_EQ(ParseUnsignedNumber("010", true, &value), NumberStatus::kOk);
  EXPECT_EQ(value, 8u);
  EXPECT_EQ(ParseUnsignedNumber("010", false, &value), NumberStatus::kOk);
  EXPECT_EQ(value, 10u);
  EXPECT_EQ(ParseUnsignedNumber("0", true, &value), NumberStatus::kOk);
  EXPECT_EQ(value, 0u);
  for (std::string_view bad : {"", "0x", "08", "1a", "-1", " 1", "1 ", "+1", "0xg"}) {
    EXPECT_EQ(ParseUnsignedNumber(bad, true, &value), NumberStatus::kNotANumber) << bad;
  }
  EXPECT_EQ(ParseUnsignedNumber("18446744073709551616", true, &value), NumberStatus::kTooLarge);
  // Left to right: which comes first decides.
  EXPECT_EQ(ParseUnsignedNumber("0x10000000000000000z", true, &value), NumberStatus::kTooLarge);
  EXPECT_EQ(ParseUnsignedNumber("0xz0000000000000000", true, &value), NumberStatus::kNotANumber);
  EXPECT_TRUE(HasHexPrefix("0x"));
  EXPECT_FALSE(HasHexPrefix("x0"));
}

}  // namespace
}  // namespace nbdcopy
