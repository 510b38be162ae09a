#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/option_numbers.h"
#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

using Words = std::vector<std::string>;

Words Lines(const std::string& text) {
  Words lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What --help shows in parentheses after `usage` (the option's left column),
// up to a ";" that starts a note: "300" from "(300; 0: wait forever)".
std::string ShownDefault(const std::string& help, const std::string& usage) {
  size_t at = help.find("  " + usage + " ");
  if (at == std::string::npos) return "(" + usage + " not found)";
  size_t open = help.find('(', at);
  size_t close = help.find_first_of(";)", open);
  if (open == std::string::npos || close == std::string::npos) return "(no default)";
  return help.substr(open + 1, close - open - 1);
}

uint64_t SizeShown(const std::string& help, const std::string& usage) {
  std::string shown = ShownDefault(help, usage);
  Result<uint64_t> size = ParseSize(shown);
  EXPECT_TRUE(size.ok()) << usage << " shows " << shown;
  return size.ok() ? *size : 0;
}

// The defaults --help shows are the ones a command line without options
// gets: read back from the text, not from the table that printed them.
TEST(HelpTextTest, ShowsTheDefaultsOfOptions) {
  const std::string help = HelpText();
  const Options defaults;
  EXPECT_EQ(ShownDefault(help, "--timeout=SECONDS"), std::to_string(defaults.timeout));
  EXPECT_EQ(SizeShown(help, "-S N, --sparse=N"), defaults.sparse_size);
  EXPECT_EQ(ShownDefault(help, "-C N, --connections=N"), std::to_string(defaults.connections));
  ASSERT_EQ(defaults.threads, 0u) << "update the expectation below";
  EXPECT_EQ(ShownDefault(help, "-T N, --threads=N"), "number of CPUs");
  EXPECT_EQ(ShownDefault(help, "-R N, --requests=N"), std::to_string(defaults.requests));
  EXPECT_EQ(SizeShown(help, "--request-size=N"), defaults.request_size);
  EXPECT_EQ(SizeShown(help, "--queue-size=N"), defaults.queue_size);

  const std::string blkhash = ShownDefault(help, "--blkhash[=ALGO[/SIZE]]");
  const BlkhashSpec bare;  // what --blkhash without a value computes
  EXPECT_EQ(blkhash.substr(0, blkhash.find('/')), bare.algorithm);
  Result<uint64_t> block_size = ParseSize(blkhash.substr(blkhash.find('/') + 1));
  ASSERT_TRUE(block_size.ok()) << blkhash;
  EXPECT_EQ(*block_size, bare.block_size);
}

TEST(HelpTextTest, DefaultsAreWhatParsingGives) {
  Result<CommandLine> parsed = ParseCommandLine({"--blkhash", "a", "b"});
  ASSERT_TRUE(parsed.ok());
  const Options& options = parsed->options;
  const Options defaults;
  EXPECT_EQ(options.timeout, defaults.timeout);
  EXPECT_EQ(options.sparse_size, defaults.sparse_size);
  EXPECT_EQ(options.connections, defaults.connections);
  EXPECT_EQ(options.threads, defaults.threads);
  EXPECT_EQ(options.requests, defaults.requests);
  EXPECT_EQ(options.request_size, defaults.request_size);
  EXPECT_EQ(options.queue_size, defaults.queue_size);
  ASSERT_TRUE(options.blkhash.has_value());
  EXPECT_EQ(options.blkhash->algorithm, BlkhashSpec().algorithm);
  EXPECT_EQ(options.blkhash->block_size, BlkhashSpec().block_size);
}

TEST(HelpTextTest, RequestSizeRangeIsTheLimits) {
  EXPECT_NE(HelpText().find(FormatSize(kMinRequestSize) + " to " + FormatSize(kMaxRequestSize)),
            std::string::npos);
}

TEST(HelpTextTest, FitsOneScreen) {
  const Words lines = Lines(HelpText());
  EXPECT_LE(lines.size(), 40u);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << line;
}

TEST(HelpTextTest, LongOptionsTextIsExact) {
  EXPECT_EQ(
      LongOptionsText(),
      "--help\n--allocated\n--blkhash\n--blkhash-file\n--checkpoint\n--checksum\n"
      "--checksum-file\n--connections\n"
      "--destination-is-zero\n--dirty-bitmap\n--flush\n--json\n--no-extents\n--progress\n--"
      "queue-size\n--ranges\n--ranges-type\n--rate\n"
      "--request-size\n--requests\n--retry\n--salvage\n--sparse\n--synchronous\n--target-is-zero\n"
      "--threads\n--timeout\n--verbose\n--verify\n--version\n");
}

TEST(HelpTextTest, ShortOptionsTextIsExact) {
  EXPECT_EQ(ShortOptionsText(), "-C\n-p\n-R\n-S\n-T\n-v\n-V\n");
}

TEST(HelpTextTest, HelpMentionsEveryOption) {
  const std::string help = HelpText();
  Words names = Lines(LongOptionsText());
  for (const std::string& name : Lines(ShortOptionsText())) names.push_back(name);
  for (const char* extra :
       {"--long-options", "--short-options", "--blkhash[=ALGO[/SIZE]]", "--blkhash-file=FILE",
        "--progress=FD", "SOURCE DESTINATION", "- | FILE | DEVICE | NBD-URI | [ CMD ARGS ... ]",
        "DESTINATION += null:"}) {
    names.push_back(extra);
  }
  for (const std::string& name : names) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(help.back(), '\n');
}

}  // namespace
}  // namespace nbdcopy
