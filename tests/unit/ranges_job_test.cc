// --ranges=FILE in one run, against a MemoryFileSystem: the list read
// from FILE or standard input, parsed against the source's size, and what
// the copy then leaves alone.
#include "job/ranges_job.h"

#include <gtest/gtest.h>

#include "support/memory_file_system.h"

namespace nbdcopy {
namespace {

using fakes::MemoryFileSystem;
using Step = FileError::Step;

Options WithRanges(const std::string& name) {
  Options options;
  options.ranges = name;
  return options;
}

RangeSet Set(std::initializer_list<std::pair<uint64_t, uint64_t>> runs) {
  RangeSet set;
  for (auto [offset, length] : runs) set.Add(offset, length);
  return set;
}

TEST(RangesJobTest, ReadsFileOrStandardInputWhole) {
  MemoryFileSystem files;
  files.files["list"] = "0 4K\n";
  files.standard_input = "1M 64K\n";
  Result<std::string> text = ReadRangesText(WithRanges("list"), files);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "0 4K\n");
  text = ReadRangesText(WithRanges("-"), files);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "1M 64K\n");
  // A pipe (--ranges=<(command)) is read too.
  files.others.insert("/dev/fd/63");
  EXPECT_TRUE(ReadRangesText(WithRanges("/dev/fd/63"), files).ok());
  EXPECT_EQ(files.log, (std::vector<std::string>{"read list", "read -", "read /dev/fd/63"}));
}

TEST(RangesJobTest, ErrorsNameTheOptionAndFile) {
  MemoryFileSystem files;
  EXPECT_EQ(ReadRangesText(WithRanges("missing"), files).status().message(),
            "--ranges=missing: No such file or directory");
  files.files["list"] = "0 1\n";
  files.fault = MemoryFileSystem::Fault{Step::kRead, EISDIR};
  EXPECT_EQ(ReadRangesText(WithRanges("list"), files).status().message(),
            "--ranges=list: Is a directory");
  files.fault = MemoryFileSystem::Fault{Step::kRead, EIO};
  EXPECT_EQ(ReadRangesText(WithRanges("-"), files).status().message(),
            "--ranges=-: Input/output error");
}

TEST(RangesJobTest, ParsesAgainstTheSourceAndLeavesTheRestAlone) {
  const Options options = WithRanges("list");
  Result<RangeSet> listed = ParseListedRanges(options, "0 4K\n1M 100\n", 2 << 20);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(*listed, Set({{0, 4096}, {1 << 20, 100}}));
  EXPECT_EQ(ParseListedRanges(options, "2M 1\n", 2 << 20).status().message(),
            "--ranges=list: line 1: offset 2097152 + length 1 = 2097153 is past the end of the "
            "image (2097152 bytes)");
  // What is left alone: the rest, as given (the work map shrinks it to
  // whole blocks, so that the listed ranges grow to them).
  EXPECT_EQ(UnlistedRanges(*listed, 2 << 20),
            Set({{4096, (1 << 20) - 4096}, {(1 << 20) + 100, (1 << 20) - 100}}));
  EXPECT_NE(RangesDigest(*listed), RangesDigest(Set({{0, 4096}})));
}

}  // namespace
}  // namespace nbdcopy
