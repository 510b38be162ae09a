#include "plan/range_list.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>


namespace nbdcopy {
namespace {

using Range = RangeSet::Range;
using Runs = std::vector<Range>;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// `nbdinfo --map=qemu:dirty-bitmap:b0 --json` (nbdinfo 1.14.2) of a 16M
// qcow2 exported by `qemu-nbd -B b0` after `qemu-io -c 'write 1M 64k'` and
// `-c 'write 5M 4k'` (the bitmap's granularity is 64K), as printed.
constexpr std::string_view kDirtyBitmapMap = R"([
{ "offset": 0, "length": 1048576, "type": 0, "description": "clean"},
{ "offset": 1048576, "length": 65536, "type": 1, "description": "dirty"},
{ "offset": 1114112, "length": 4128768, "type": 0, "description": "clean"},
{ "offset": 5242880, "length": 65536, "type": 1, "description": "dirty"},
{ "offset": 5308416, "length": 11468800, "type": 0, "description": "clean"}
]
)";

// `nbdkit -U - sparse-random 1M percent=50 runlength=65536 seed=1 --run
// 'nbdinfo --map --json "$uri"'` (base:allocation: 0 data, 3 hole,zero).
constexpr std::string_view kAllocationMap = R"([
{ "offset": 0, "length": 77824, "type": 3, "description": "hole,zero"},
{ "offset": 77824, "length": 49152, "type": 0, "description": "data"},
{ "offset": 126976, "length": 45056, "type": 3, "description": "hole,zero"},
{ "offset": 172032, "length": 167936, "type": 0, "description": "data"},
{ "offset": 339968, "length": 77824, "type": 3, "description": "hole,zero"},
{ "offset": 417792, "length": 81920, "type": 0, "description": "data"},
{ "offset": 499712, "length": 81920, "type": 3, "description": "hole,zero"},
{ "offset": 581632, "length": 196608, "type": 0, "description": "data"},
{ "offset": 778240, "length": 40960, "type": 3, "description": "hole,zero"},
{ "offset": 819200, "length": 110592, "type": 0, "description": "data"},
{ "offset": 929792, "length": 118784, "type": 3, "description": "hole,zero"}
]
)";

Runs RunsOf(std::string_view text, uint64_t image_size = 16 * kMiB,
            std::optional<int64_t> type = std::nullopt) {
  Result<RangeSet> set = ParseRangeList(text, image_size, type, "list");
  EXPECT_TRUE(set.ok()) << set.status().message();
  return set.ok() ? set->Runs() : Runs{};
}

std::string ErrorOf(std::string_view text, uint64_t image_size = 16 * kMiB,
                    std::optional<int64_t> type = std::nullopt) {
  Result<RangeSet> set = ParseRangeList(text, image_size, type, "list");
  EXPECT_FALSE(set.ok()) << text;
  return set.ok() ? "(accepted)" : set.status().message();
}

TEST(RangeListTest, JsonWithOffsetOrStartAndExtraKeys) {
  EXPECT_EQ(RunsOf(R"([{"offset": 0, "length": 4096}])"), (Runs{{0, 4096}}));
  EXPECT_EQ(RunsOf(R"([{"start": 8192, "length": 512}])"), (Runs{{8192, 512}}));
  EXPECT_EQ(RunsOf(R"(  [{"length": 10, "comment": "x", "offset": 100, "depth": [1, {"a": 2}]},
                         {"start": 200, "length": 10, "description": "dirty"}])"),
            (Runs{{100, 10}, {200, 10}}));
}

TEST(RangeListTest, DirtyBitmapMapWithTypeFilter) {
  EXPECT_EQ(RunsOf(kDirtyBitmapMap, 16 * kMiB, 1),
            (Runs{{1 * kMiB, 64 * kKiB}, {5 * kMiB, 64 * kKiB}}));
  Result<RangeSet> clean = ParseRangeList(kDirtyBitmapMap, 16 * kMiB, 0, "-");
  ASSERT_TRUE(clean.ok()) << clean.status().message();
  EXPECT_EQ(clean->bytes(), 16 * kMiB - 128 * kKiB);
  EXPECT_EQ(clean->size(), 3u);
}

TEST(RangeListTest, AllocationMapWithTypeFilter) {
  EXPECT_EQ(
      RunsOf(kAllocationMap, kMiB, 0),
      (Runs{
          {77824, 49152}, {172032, 167936}, {417792, 81920}, {581632, 196608}, {819200, 110592}}));
  Result<RangeSet> holes = ParseRangeList(kAllocationMap, kMiB, 3, "map.json");
  ASSERT_TRUE(holes.ok()) << holes.status().message();
  EXPECT_EQ(holes->size(), 6u);
  EXPECT_EQ(holes->Runs().front(), (Range{0, 77824}));
  EXPECT_EQ(holes->Runs().back(), (Range{929792, 118784}));
}

TEST(RangeListTest, TypedRowsNeedAFilter) {
  EXPECT_EQ(ErrorOf(kDirtyBitmapMap),
            "--ranges=list: the rows have a \"type\", as an nbdinfo --map lists every kind of "
            "range of the image; choose the rows to copy with --ranges-type=N");
  // One typed row among untyped ones is enough.
  EXPECT_EQ(ErrorOf(R"([{"offset": 0, "length": 1}, {"offset": 9, "length": 1, "type": 1}])"),
            ErrorOf(kDirtyBitmapMap));
}

TEST(RangeListTest, FilterNeedsTypedRows) {
  EXPECT_EQ(
      ErrorOf(R"([{"offset": 0, "length": 1, "type": 1}, {"offset": 9, "length": 1}])", kMiB, 1),
      "--ranges=list: element [1]: no \"type\" to match --ranges-type=1 against");
  EXPECT_EQ(ErrorOf("0 4096\n", kMiB, 1),
            "--ranges=list: --ranges-type=1 selects rows of a JSON list by their \"type\", but "
            "this list is text");
  EXPECT_EQ(ErrorOf(R"([{"offset": 0, "length": 1, "type": "dirty"}])", kMiB, 1),
            "--ranges=list: element [0]: \"type\" must be a JSON integer, not a string");
}

TEST(RangeListTest, FilterMatchesExactlyIncludingNegativeAndHugeTypes) {
  const std::string_view rows = R"([{"offset": 0, "length": 1, "type": -2},
      {"offset": 10, "length": 1, "type": 18446744073709551615},
      {"offset": 20, "length": 1, "type": 3}])";
  EXPECT_EQ(RunsOf(rows, kMiB, -2), (Runs{{0, 1}}));
  EXPECT_NE(ErrorOf(rows, kMiB, -1).find("no row has \"type\" -1"),
            std::string::npos);  // not 2^64-1
  EXPECT_EQ(RunsOf(rows, kMiB, 3), (Runs{{20, 1}}));
  EXPECT_EQ(ErrorOf(rows, kMiB, 1),
            "--ranges=list: no row has \"type\" 1: the list names no ranges to copy");
}

TEST(RangeListTest, TextWithSuffixesCommentsBlankLinesCommasAndTabs) {
  const std::string_view text =
      "# changed blocks\n"
      "\n"
      "0 4096\n"
      "  1M\t64K   # the second\n"
      "2MiB,4k\n"
      "3m , 1KB\r\n"
      "\t \n"
      "4194304\t,\t512B\n"
      "0x500000 0X1000\n"
      "6M 0x10  #hex length\n";
  EXPECT_EQ(RunsOf(text), (Runs{{0, 4096},
                                {1 * kMiB, 64 * kKiB},
                                {2 * kMiB, 4 * kKiB},
                                {3 * kMiB, 1 * kKiB},
                                {4 * kMiB, 512},
                                {5 * kMiB, 4096},
                                {6 * kMiB, 16}}));
  EXPECT_EQ(RunsOf("0 1"), (Runs{{0, 1}}));  // no final newline
}

TEST(RangeListTest, UnsortedOverlappingAndAdjacentRangesMerge) {
  EXPECT_EQ(RunsOf("100 10\n0 10\n10 10\n50 20\n60 5\n95 5\n200 0\n"),
            (Runs{{0, 20}, {50, 20}, {95, 15}}));
  EXPECT_EQ(RunsOf(R"([{"offset": 30, "length": 10}, {"offset": 0, "length": 35},
                       {"offset": 40, "length": 1}, {"offset": 50, "length": 2}])"),
            (Runs{{0, 41}, {50, 2}}));
}

TEST(RangeListTest, ZeroLengthsAreIgnoredButStillChecked) {
  EXPECT_EQ(RunsOf("0 0\n8 8\n1M 0\n"), (Runs{{8, 8}}));
  EXPECT_EQ(RunsOf("0 16\n1024 0\n", 1024), (Runs{{0, 16}}));  // at the very end
  EXPECT_EQ(ErrorOf("0 16\n1025 0\n", 1024),
            "--ranges=list: line 2: offset 1025 + length 0 = 1025 is past the end of the image "
            "(1024 bytes)");
}

TEST(RangeListTest, RangesMayReachButNotPassTheEnd) {
  EXPECT_EQ(RunsOf("1000 24\n", 1024), (Runs{{1000, 24}}));
  EXPECT_EQ(ErrorOf("0 1\n1000 25\n", 1024),
            "--ranges=list: line 2: offset 1000 + length 25 = 1025 is past the end of the image "
            "(1024 bytes)");
  EXPECT_EQ(ErrorOf(R"([{"offset": 0, "length": 2048}])", 1024),
            "--ranges=list: element [0]: offset 0 + length 2048 = 2048 is past the end of the "
            "image (1024 bytes)");
  // A row that is not copied must still fit the image.
  EXPECT_EQ(ErrorOf(R"([{"offset": 0, "length": 1, "type": 1},
                        {"offset": 0, "length": 2048, "type": 0}])",
                    1024, 1),
            "--ranges=list: element [1]: offset 0 + length 2048 = 2048 is past the end of the "
            "image (1024 bytes)");
}

TEST(RangeListTest, Overflow) {
  EXPECT_EQ(ErrorOf("0xffffffffffffffff 2\n", UINT64_MAX),
            "--ranges=list: line 1: offset 18446744073709551615 + length 2 overflows 64 bits");
  EXPECT_EQ(ErrorOf(R"([{"offset": 18446744073709551615, "length": 1}])", UINT64_MAX),
            "--ranges=list: element [0]: offset 18446744073709551615 + length 1 overflows 64 bits");
  EXPECT_EQ(RunsOf("0 0xffffffffffffffff\n", UINT64_MAX), (Runs{{0, UINT64_MAX}}));
}

TEST(RangeListTest, TextNumberErrors) {
  EXPECT_EQ(ErrorOf("abc 10\n"), "--ranges=list: line 1: offset: not a size: 'abc'");
  EXPECT_EQ(ErrorOf("0 1\n\n# c\n10 -5\n"),
            "--ranges=list: line 4: length: size must not be negative: '-5'");
  EXPECT_EQ(
      ErrorOf("1.5M 1\n"),
      "--ranges=list: line 1: offset: unknown size suffix '.5M' in '1.5M' (use K, M, G or T)");
  EXPECT_EQ(ErrorOf("0 99999999999999999999\n"),
            "--ranges=list: line 1: length: size too large: '99999999999999999999'");
  EXPECT_EQ(ErrorOf("0 16777216T\n"), "--ranges=list: line 1: length: size too large: '16777216T'");
  EXPECT_EQ(ErrorOf("0x 1\n"), "--ranges=list: line 1: offset: not a hexadecimal number: '0x'");
  EXPECT_EQ(ErrorOf("0x1g 1\n"), "--ranges=list: line 1: offset: not a hexadecimal number: '0x1g'");
  EXPECT_EQ(ErrorOf("0 0x1K\n"), "--ranges=list: line 1: length: not a hexadecimal number: '0x1K'");
  EXPECT_EQ(ErrorOf("0x10000000000000000 1\n"),
            "--ranges=list: line 1: offset: number too large: '0x10000000000000000'");
  // A bad digit anywhere makes it no number, even after too many digits.
  EXPECT_EQ(ErrorOf("0x10000000000000000g 1\n"),
            "--ranges=list: line 1: offset: not a hexadecimal number: '0x10000000000000000g'");
  EXPECT_EQ(RunsOf("0x00000000000000001 1\n"), (Runs{{1, 1}}));  // leading zeros do not count
}

TEST(RangeListTest, TextLineShapeErrors) {
  const std::string expected =
      "--ranges=list: line 2: expected \"OFFSET LENGTH\" (two sizes), not ";
  EXPECT_EQ(ErrorOf("0 1\n4096\n"), expected + "'4096'");
  EXPECT_EQ(ErrorOf("0 1\n  1 2 3  # three\n"), expected + "'1 2 3'");
  EXPECT_EQ(ErrorOf("0 1\n1,,2\n"), expected + "'1,,2'");
  EXPECT_EQ(ErrorOf("0 1\n,1 2\n"), expected + "',1 2'");
  EXPECT_EQ(ErrorOf("0 1\n1 2,\n"), expected + "'1 2,'");
  EXPECT_EQ(ErrorOf("0 1\n1\x01 2\n"),
            "--ranges=list: line 2: offset: unknown size suffix '?' in '1?' (use K, M, G or T)");
  EXPECT_EQ(
      ErrorOf("0 1\n1 " + std::string(41, '1') + "\n"),
      "--ranges=list: line 2: length: too long for a size: '" + std::string(40, '1') + "...'");
  EXPECT_EQ(ErrorOf("0 1\n1 2 \x01\x02" + std::string(50, 'x') + "\n"),
            expected + "'1 2 ??" + std::string(34, 'x') + "...'");
}

TEST(RangeListTest, JsonFieldErrors) {
  auto error = [](std::string_view rows) { return ErrorOf(rows); };
  EXPECT_EQ(error(R"([{"offset": 0, "length": 1}, {"length": 1}])"),
            "--ranges=list: element [1]: no \"offset\" (or \"start\")");
  EXPECT_EQ(error(R"([{"offset": 0}])"), "--ranges=list: element [0]: no \"length\"");
  EXPECT_EQ(error(R"([{"offset": 0, "start": 0, "length": 1}])"),
            "--ranges=list: element [0]: has both \"offset\" and \"start\" (give one)");
  EXPECT_EQ(error(R"([{"offset": -1, "length": 1}])"),
            "--ranges=list: element [0]: \"offset\" must not be negative: -1");
  EXPECT_EQ(error(R"([{"offset": 0, "length": -4096}])"),
            "--ranges=list: element [0]: \"length\" must not be negative: -4096");
  const std::string integer = "must be a JSON integer from 0 to 18446744073709551615, not ";
  EXPECT_EQ(error(R"([{"offset": 1.5, "length": 1}])"),
            "--ranges=list: element [0]: \"offset\" " + integer + "the number 1.5");
  EXPECT_EQ(error(R"([{"offset": 0, "length": 4096.0}])"),
            "--ranges=list: element [0]: \"length\" " + integer + "the number 4096.0");
  EXPECT_EQ(error(R"([{"offset": 0, "length": 1e3}])"),
            "--ranges=list: element [0]: \"length\" " + integer + "the number 1000.0");
  EXPECT_EQ(
      error(R"([{"offset": 18446744073709551616, "length": 1}])"),
      "--ranges=list: element [0]: \"offset\" " + integer + "the number 1.8446744073709552e+19");
  EXPECT_EQ(error(R"([{"offset": "4096", "length": 1}])"),
            "--ranges=list: element [0]: \"offset\" " + integer + "a string");
  EXPECT_EQ(error(R"([{"offset": 0, "length": null}])"),
            "--ranges=list: element [0]: \"length\" " + integer + "null");
  EXPECT_EQ(error(R"([{"offset": 0, "length": true}])"),
            "--ranges=list: element [0]: \"length\" " + integer + "a boolean");
  EXPECT_EQ(RunsOf(R"([{"offset": -0, "length": 1}])"), (Runs{{0, 1}}));
}

TEST(RangeListTest, JsonShapeErrors) {
  EXPECT_EQ(ErrorOf(R"({"offset": 0, "length": 1})"),
            "--ranges=list: not a JSON array of objects (the top level is an object)");
  EXPECT_EQ(ErrorOf(R"([{"offset": 0, "length": 1}, 7])"),
            "--ranges=list: element [1]: not an object but a number");
  EXPECT_EQ(ErrorOf(R"([[0, 1]])"), "--ranges=list: element [0]: not an object but an array");
  EXPECT_EQ(ErrorOf(R"(["0 1"])"), "--ranges=list: element [0]: not an object but a string");
}

TEST(RangeListTest, InvalidJsonGivesTheParsersPosition) {
  std::string message =
      ErrorOf("[\n{\"offset\": 0, \"length\": 1},\n{\"offset\": 2 \"length\": 1}\n]");
  EXPECT_EQ(message.rfind("--ranges=list: invalid JSON: parse error at line 3, column ", 0), 0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  message = ErrorOf("[{\"offset\": 0, \"length\": 1}");  // cut short
  EXPECT_EQ(message.rfind("--ranges=list: invalid JSON: parse error at line 1, column ", 0), 0u)
      << message;
  EXPECT_NE(message.find("end of input"), std::string::npos) << message;
  // What the parser quotes of the list is printable and cut short.
  message = ErrorOf("[\"\xff\"]");
  EXPECT_NE(message.find("ill-formed UTF-8 byte; last read: '\"?'"), std::string::npos) << message;
  message = ErrorOf("[\"" + std::string(500, 'a'));
  EXPECT_NE(message.find("last read: '\"aaa"), std::string::npos) << message;
  EXPECT_LT(message.size(), 250u) << message;
  EXPECT_EQ(message.substr(message.size() - 3), "...") << message;
  message = ErrorOf("[{\"offset\": 0, \"length\": 1}] trailing");
  EXPECT_NE(message.find("invalid JSON: parse error at line 1, column "), std::string::npos);
}

TEST(RangeListTest, EmptyListsAreRefused) {
  const std::string text =
      "--ranges=list: the list names no ranges to copy (no lines, or only "
      "comments and zero lengths)";
  EXPECT_EQ(ErrorOf(""), text);
  EXPECT_EQ(ErrorOf("\n  \n# nothing changed\n"), text);
  EXPECT_EQ(ErrorOf("0 0\n100 0\n"), text);
  const std::string json =
      "--ranges=list: the list names no ranges to copy (an empty array or only zero lengths)";
  EXPECT_EQ(ErrorOf("  []\n"), json);
  EXPECT_EQ(ErrorOf("[]", kMiB, 1), json);
  EXPECT_EQ(ErrorOf(R"([{"offset": 5, "length": 0}])"), json);
  EXPECT_EQ(ErrorOf(R"([{"offset": 5, "length": 0, "type": 1}])", kMiB, 1), json);
}

TEST(RangeListTest, MessagesNameTheFileAsGiven) {
  Result<RangeSet> set = ParseRangeList("x y\n", kMiB, std::nullopt, "-");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(), "--ranges=-: line 1: offset: not a size: 'x'");
  set = ParseRangeList("x y\n", kMiB, std::nullopt, "a\nb");  // still one line
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(), "--ranges=a?b: line 1: offset: not a size: 'x'");
  set = ParseRangeList("", kMiB, std::nullopt, "/tmp/changes.txt");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message().rfind("--ranges=/tmp/changes.txt: the list names no ranges", 0),
            0u);
}

TEST(RangeListTest, ByteOrderMarkAndLeadingWhitespace) {
  EXPECT_EQ(RunsOf("\xEF\xBB\xBF"
                   "0 8\n"),
            (Runs{{0, 8}}));
  EXPECT_EQ(RunsOf("\xEF\xBB\xBF \n\t[{\"offset\": 8, \"length\": 8}]"), (Runs{{8, 8}}));
}

}  // namespace
}  // namespace nbdcopy
