#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

using Words = std::vector<std::string>;

Result<CommandLine> Parse(const Words& args) { return ParseCommandLine(args); }

// Parses a copy command line that must succeed.
Options ParseOk(const Words& args) {
  Result<CommandLine> result = Parse(args);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return Options();
  EXPECT_EQ(result->action, Action::kCopy);
  return result->options;
}

// The error message of a command line that must fail.
std::string ParseError(const Words& args) {
  Result<CommandLine> result = Parse(args);
  EXPECT_FALSE(result.ok());
  return result.ok() ? std::string("(parsed)") : result.status().message();
}

Action ParseAction(const Words& args) {
  Result<CommandLine> result = Parse(args);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result->action : Action::kCopy;
}

Words Lines(const std::string& text) {
  Words lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CommandLineTest, Defaults) {
  Options options = ParseOk({"src", "dst"});
  EXPECT_FALSE(options.allocated);
  EXPECT_EQ(options.connections, 4u);
  EXPECT_FALSE(options.destination_is_zero);
  EXPECT_FALSE(options.flush);
  EXPECT_TRUE(options.extents);
  EXPECT_EQ(options.progress, ProgressMode::kNone);
  EXPECT_EQ(options.progress_fd, -1);
  EXPECT_EQ(options.request_size, 1024u * 1024);
  EXPECT_EQ(options.queue_size, 14u * 1024 * 1024);
  EXPECT_EQ(options.requests, 64u);
  EXPECT_EQ(options.sparse_size, 4096u);
  EXPECT_FALSE(options.synchronous);
  EXPECT_EQ(options.threads, 0u);
  EXPECT_FALSE(options.verbose);
  EXPECT_FALSE(options.blkhash.has_value());
  EXPECT_FALSE(options.blkhash_file.has_value());
  EXPECT_EQ(options.source, Words{"src"});
  EXPECT_EQ(options.destination, Words{"dst"});
}

TEST(CommandLineTest, Flags) {
  EXPECT_TRUE(ParseOk({"--allocated", "a", "b"}).allocated);
  EXPECT_TRUE(ParseOk({"--destination-is-zero", "a", "b"}).destination_is_zero);
  EXPECT_TRUE(ParseOk({"--target-is-zero", "a", "b"}).destination_is_zero);
  EXPECT_TRUE(ParseOk({"--flush", "a", "b"}).flush);
  EXPECT_FALSE(ParseOk({"--no-extents", "a", "b"}).extents);
  EXPECT_TRUE(ParseOk({"--synchronous", "a", "b"}).synchronous);
  EXPECT_TRUE(ParseOk({"-v", "a", "b"}).verbose);
  EXPECT_TRUE(ParseOk({"--verbose", "a", "b"}).verbose);
  EXPECT_FALSE(ParseOk({"a", "b"}).verify);
  EXPECT_TRUE(ParseOk({"--verify", "a", "b"}).verify);
  EXPECT_FALSE(ParseOk({"a", "b"}).dirty_bitmap.has_value());
  EXPECT_EQ(ParseOk({"--dirty-bitmap=b0", "a", "b"}).dirty_bitmap, "b0");
  EXPECT_EQ(ParseOk({"--dirty-bitmap", "b 1", "a", "b"}).dirty_bitmap, "b 1");
  EXPECT_EQ(ParseError({"--dirty-bitmap=", "a", "b"}), "--dirty-bitmap: missing value after '='");
  EXPECT_TRUE(ParseOk({"-v", "--verbose", "a", "b"}).verbose);  // repeats are fine
}

TEST(CommandLineTest, Timeout) {
  EXPECT_EQ(ParseOk({"a", "b"}).timeout, 300u);
  EXPECT_EQ(ParseOk({"--timeout=0", "a", "b"}).timeout, 0u);
  EXPECT_EQ(ParseOk({"--timeout", "5", "a", "b"}).timeout, 5u);
  EXPECT_EQ(ParseOk({"--timeout=86400", "a", "b"}).timeout, 86400u);
  EXPECT_EQ(ParseError({"--timeout=86401", "a", "b"}),
            "--timeout: number too large: '86401' (maximum 86400)");
  EXPECT_EQ(ParseError({"--timeout=5s", "a", "b"}), "--timeout: not a number: '5s'");
  EXPECT_EQ(ParseError({"--timeout=-1", "a", "b"}), "--timeout: must not be negative: '-1'");
}

TEST(CommandLineTest, CountsShortAndLong) {
  EXPECT_EQ(ParseOk({"-C", "2", "a", "b"}).connections, 2u);
  EXPECT_EQ(ParseOk({"-C2", "a", "b"}).connections, 2u);
  EXPECT_EQ(ParseOk({"--connections=3", "a", "b"}).connections, 3u);
  EXPECT_EQ(ParseOk({"--connections", "5", "a", "b"}).connections, 5u);
  EXPECT_EQ(ParseOk({"-R", "8", "a", "b"}).requests, 8u);
  EXPECT_EQ(ParseOk({"-R8", "a", "b"}).requests, 8u);
  EXPECT_EQ(ParseOk({"--requests=128", "a", "b"}).requests, 128u);
  EXPECT_EQ(ParseOk({"--requests", "1", "a", "b"}).requests, 1u);
  EXPECT_EQ(ParseOk({"-T", "6", "a", "b"}).threads, 6u);
  EXPECT_EQ(ParseOk({"-T0", "a", "b"}).threads, 0u);
  EXPECT_EQ(ParseOk({"--threads=16", "a", "b"}).threads, 16u);
  EXPECT_EQ(ParseOk({"--threads", "0", "a", "b"}).threads, 0u);
  EXPECT_EQ(ParseOk({"-C", "4294967295", "a", "b"}).connections, 4294967295u);
}

TEST(CommandLineTest, SizesShortLongAndHuman) {
  EXPECT_EQ(ParseOk({"--request-size=4096", "a", "b"}).request_size, 4096u);
  EXPECT_EQ(ParseOk({"--request-size", "32M", "a", "b"}).request_size, 32u << 20);
  EXPECT_EQ(ParseOk({"--request-size=4194304", "a", "b"}).request_size, 4u << 20);
  EXPECT_EQ(ParseOk({"--request-size=64k", "a", "b"}).request_size, 64u << 10);
  EXPECT_EQ(ParseOk({"--queue-size=1", "a", "b"}).queue_size, 1u);
  EXPECT_EQ(ParseOk({"--queue-size", "1G", "a", "b"}).queue_size, 1u << 30);
  EXPECT_EQ(ParseOk({"--queue-size=64MiB", "a", "b"}).queue_size, 64u << 20);
  EXPECT_EQ(ParseOk({"-S", "0", "a", "b"}).sparse_size, 0u);
  EXPECT_EQ(ParseOk({"-S512", "a", "b"}).sparse_size, 512u);
  EXPECT_EQ(ParseOk({"--sparse=1k", "a", "b"}).sparse_size, 1024u);
  EXPECT_EQ(ParseOk({"--sparse", "64K", "a", "b"}).sparse_size, 64u << 10);
}

TEST(CommandLineTest, Json) {
  Options plain = ParseOk({"a", "b"});
  EXPECT_FALSE(plain.json);
  Options stdout_report = ParseOk({"--json", "a", "b"});
  EXPECT_TRUE(stdout_report.json);
  EXPECT_FALSE(stdout_report.json_file);
  Options file_report = ParseOk({"--json=report.json", "a", "b"});
  EXPECT_TRUE(file_report.json);
  EXPECT_EQ(file_report.json_file, "report.json");
  // Like --progress: only "--json=FILE" takes a value.
  EXPECT_EQ(ParseOk({"--json", "x", "b"}).source, Words{"x"});
  EXPECT_EQ(ParseError({"--json=", "a", "b"}), "--json: missing value after '='");
}

TEST(CommandLineTest, Progress) {
  Options bar = ParseOk({"-p", "a", "b"});
  EXPECT_EQ(bar.progress, ProgressMode::kBar);
  EXPECT_EQ(bar.progress_fd, -1);
  EXPECT_EQ(ParseOk({"--progress", "a", "b"}).progress, ProgressMode::kBar);

  Options fd = ParseOk({"--progress=3", "a", "b"});
  EXPECT_EQ(fd.progress, ProgressMode::kFd);
  EXPECT_EQ(fd.progress_fd, 3);
  EXPECT_EQ(ParseOk({"--progress=0", "a", "b"}).progress_fd, 0);

  // As upstream: a later bare -p does not forget the FD; a later FD wins.
  Options both = ParseOk({"--progress=3", "-p", "--progress", "a", "b"});
  EXPECT_EQ(both.progress, ProgressMode::kFd);
  EXPECT_EQ(both.progress_fd, 3);
  EXPECT_EQ(ParseOk({"--progress=3", "--progress=4", "a", "b"}).progress_fd, 4);

  // Only "--progress=FD" takes a value: here 3 is an operand.
  EXPECT_EQ(ParseError({"--progress", "3", "a", "b"}),
            "expected SOURCE and DESTINATION, got 3 operands (try --help)");
  Options operand = ParseOk({"--progress", "3", "b"});
  EXPECT_EQ(operand.progress, ProgressMode::kBar);
  EXPECT_EQ(operand.source, Words{"3"});
}

TEST(CommandLineTest, Blkhash) {
  std::optional<BlkhashSpec> bare = ParseOk({"--blkhash", "a", "b"}).blkhash;
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->algorithm, "sha256");
  EXPECT_EQ(bare->block_size, 65536u);

  for (const char* algorithm : {"md5", "sha1", "sha256", "sha512"}) {
    std::optional<BlkhashSpec> spec =
        ParseOk({std::string("--blkhash=") + algorithm, "a", "b"}).blkhash;
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->algorithm, algorithm);
    EXPECT_EQ(spec->block_size, 65536u);
  }
  std::optional<BlkhashSpec> sized = ParseOk({"--blkhash=sha512/512k", "a", "b"}).blkhash;
  ASSERT_TRUE(sized.has_value());
  EXPECT_EQ(sized->algorithm, "sha512");
  EXPECT_EQ(sized->block_size, 512u * 1024);
  EXPECT_EQ(ParseOk({"--blkhash=md5/4096", "a", "b"}).blkhash->block_size, 4096u);

  // A bare --blkhash does not take the next word.
  EXPECT_EQ(ParseOk({"--blkhash", "md5", "b"}).source, Words{"md5"});

  EXPECT_EQ(ParseOk({"--blkhash-file=out.hash", "a", "b"}).blkhash_file, "out.hash");
  EXPECT_EQ(ParseOk({"--blkhash-file", "out.hash", "a", "b"}).blkhash_file, "out.hash");
  EXPECT_FALSE(ParseOk({"--blkhash-file=x", "a", "b"}).blkhash.has_value());
}

TEST(CommandLineTest, Checksum) {
  std::optional<ChecksumSpec> bare = ParseOk({"--checksum", "a", "b"}).checksum;
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->algorithm, "sha256");
  EXPECT_FALSE(bare->expected.has_value());
  // A bare --checksum does not take the next word.
  EXPECT_EQ(ParseOk({"--checksum", "md5", "b"}).source, Words{"md5"});
  EXPECT_FALSE(ParseOk({"a", "b"}).checksum.has_value());

  for (const char* algorithm : {"md5", "SHA1", "Sha256", "sha512"}) {
    std::optional<ChecksumSpec> spec =
        ParseOk({std::string("--checksum=") + algorithm, "a", "b"}).checksum;
    ASSERT_TRUE(spec.has_value());
    std::string lower(algorithm);
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    EXPECT_EQ(spec->algorithm, lower);
  }
  // CDI's ALGO:HEX, either case; kept lowercase.
  const std::string hex = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
  std::optional<ChecksumSpec> expected =
      ParseOk({"--checksum=SHA256:" + hex, "a", "b"}).checksum;
  ASSERT_TRUE(expected.has_value());
  EXPECT_EQ(expected->algorithm, "sha256");
  EXPECT_EQ(expected->expected,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  EXPECT_EQ(ParseOk({"--checksum=md5:" + std::string(32, 'a'), "a", "b"}).checksum->expected,
            std::string(32, 'a'));

  EXPECT_EQ(ParseError({"--checksum=sha3", "a", "b"}),
            "--checksum: unknown algorithm 'sha3' (expected md5, sha1, sha256 or sha512)");
  EXPECT_EQ(ParseError({"--checksum=sha256:abc", "a", "b"}),
            "--checksum: sha256 digests are 64 hex digits, not 'abc'");
  EXPECT_EQ(ParseError({"--checksum=md5:" + std::string(32, 'g'), "a", "b"}),
            "--checksum: md5 digests are 32 hex digits, not '" + std::string(32, 'g') + "'");
  EXPECT_EQ(ParseError({"--checksum=sha1:", "a", "b"}),
            "--checksum: sha1 digests are 40 hex digits, not ''");
  EXPECT_EQ(ParseError({"--checksum=sha512:" + hex, "a", "b"}),
            "--checksum: sha512 digests are 128 hex digits, not '" + hex + "'");

  EXPECT_EQ(ParseOk({"--checksum-file=sum", "a", "b"}).checksum_file, "sum");
  EXPECT_EQ(ParseOk({"--checksum-file", "sum", "a", "b"}).checksum_file, "sum");
}

TEST(CommandLineTest, CombinedShortFlags) {
  Options options = ParseOk({"-vp", "a", "b"});
  EXPECT_TRUE(options.verbose);
  EXPECT_EQ(options.progress, ProgressMode::kBar);
  options = ParseOk({"-vC3", "a", "b"});  // a value may end a cluster
  EXPECT_TRUE(options.verbose);
  EXPECT_EQ(options.connections, 3u);
  options = ParseOk({"-pvR", "7", "a", "b"});
  EXPECT_EQ(options.requests, 7u);
}

TEST(CommandLineTest, OptionsAfterAndBetweenOperands) {
  Options options = ParseOk({"a", "-C", "2", "b", "--flush", "--request-size=1M"});
  EXPECT_EQ(options.source, Words{"a"});
  EXPECT_EQ(options.destination, Words{"b"});
  EXPECT_EQ(options.connections, 2u);
  EXPECT_TRUE(options.flush);
  EXPECT_EQ(options.request_size, 1u << 20);
}

TEST(CommandLineTest, LastValueWins) {
  EXPECT_EQ(ParseOk({"-C", "2", "--connections=3", "a", "b"}).connections, 3u);
  // Every occurrence is still checked, as getopt would.
  EXPECT_EQ(ParseError({"-C", "0", "-C", "3", "a", "b"}), "--connections: must be at least 1");
}

TEST(CommandLineTest, OperandsAndCommands) {
  Options options = ParseOk({"--", "-", "[", "qemu-nbd", "-f", "qcow2", "d.qcow2", "]"});
  EXPECT_EQ(options.source, Words{"-"});
  EXPECT_EQ(options.destination, (Words{"[", "qemu-nbd", "-f", "qcow2", "d.qcow2", "]"}));

  options = ParseOk({"-v", "--", "[", "cmd", "-C", "3", "--flush", "]", "[", "x", "]"});
  EXPECT_TRUE(options.verbose);
  EXPECT_EQ(options.connections, 4u);
  EXPECT_FALSE(options.flush);
  EXPECT_EQ(options.source, (Words{"[", "cmd", "-C", "3", "--flush", "]"}));
  EXPECT_EQ(options.destination, (Words{"[", "x", "]"}));

  // Without options inside, no "--" is needed; options may follow.
  options = ParseOk({"[", "nbdkit", "memory", "1M", "]", "null:", "--flush"});
  EXPECT_EQ(options.source, (Words{"[", "nbdkit", "memory", "1M", "]"}));
  EXPECT_EQ(options.destination, Words{"null:"});
  EXPECT_TRUE(options.flush);

  // After "--" everything is an operand, even "--" again.
  EXPECT_EQ(ParseOk({"a", "--", "-v"}).destination, Words{"-v"});
  EXPECT_EQ(ParseOk({"--", "--", "-"}).source, Words{"--"});

  // A stray "]" or an empty "[ ]" is left for ClassifyEndpoint to judge.
  EXPECT_EQ(ParseOk({"]", "x"}).source, Words{"]"});
  EXPECT_EQ(ParseOk({"[", "]", "x"}).source, (Words{"[", "]"}));
}

TEST(CommandLineTest, OperandCountErrors) {
  EXPECT_EQ(ParseError({}), "expected SOURCE and DESTINATION, got 0 operands (try --help)");
  EXPECT_EQ(ParseError({"a"}), "expected SOURCE and DESTINATION, got 1 operand (try --help)");
  EXPECT_EQ(ParseError({"a", "b", "c"}),
            "expected SOURCE and DESTINATION, got 3 operands (try --help)");
  EXPECT_EQ(ParseError({"--", "[", "a", "]", "[", "b", "]", "c"}),
            "expected SOURCE and DESTINATION, got 3 operands (try --help)");
  EXPECT_EQ(ParseError({"--", "a", "[", "cmd", "x"}),
            "'[' without a matching ']' (write '[ CMD ARGS ... ]' as separate words)");
}

struct Rejection {
  Words args;
  std::string message;
};

TEST(CommandLineTest, EveryRejectionNamesTheOptionAndReason) {
  const std::vector<Rejection> cases = {
      {{"-C", "0", "a", "b"}, "--connections: must be at least 1"},
      {{"--connections=0", "a", "b"}, "--connections: must be at least 1"},
      {{"-C", "-1", "a", "b"}, "--connections: must not be negative: '-1'"},
      {{"-C", "abc", "a", "b"}, "--connections: not a number: 'abc'"},
      {{"-C", "4x", "a", "b"}, "--connections: not a number: '4x'"},
      {{"-C", "+4", "a", "b"}, "--connections: not a number: '+4'"},
      {{"-C", "", "a", "b"}, "--connections: not a number: ''"},
      {{"-C", "4K", "a", "b"}, "--connections: not a number: '4K'"},
      {{"-C", "4294967296", "a", "b"},
       "--connections: number too large: '4294967296' (maximum 4294967295)"},
      {{"-C", "99999999999999999999", "a", "b"},
       "--connections: number too large: '99999999999999999999' (maximum 4294967295)"},
      {{"-C", "--", "a", "b"}, "--connections: not a number: '--'"},
      {{"-R", "0", "a", "b"}, "--requests: must be at least 1"},
      {{"--requests=-5", "a", "b"}, "--requests: must not be negative: '-5'"},
      {{"--requests=many", "a", "b"}, "--requests: not a number: 'many'"},
      {{"-T", "-1", "a", "b"}, "--threads: must not be negative: '-1'"},
      {{"--threads=x", "a", "b"}, "--threads: not a number: 'x'"},
      {{"--request-size=1000", "a", "b"},
       "--request-size: must be a power of 2 from 4096 to 33554432"},
      {{"--request-size=2048", "a", "b"},
       "--request-size: must be a power of 2 from 4096 to 33554432"},
      {{"--request-size=64M", "a", "b"},
       "--request-size: must be a power of 2 from 4096 to 33554432"},
      {{"--request-size=0", "a", "b"},
       "--request-size: must be a power of 2 from 4096 to 33554432"},
      {{"--request-size=abc", "a", "b"}, "--request-size: not a size: 'abc'"},
      {{"--request-size=-4096", "a", "b"}, "--request-size: size must not be negative: '-4096'"},
      {{"--queue-size=0", "a", "b"}, "--queue-size: must be at least 1"},
      {{"--queue-size=12X", "a", "b"},
       "--queue-size: unknown size suffix 'X' in '12X' (use K, M, G or T)"},
      {{"--queue-size=99999999999G", "a", "b"}, "--queue-size: size too large: '99999999999G'"},
      {{"-S", "100", "a", "b"}, "--sparse: must be 0 or a power of 2 >= 512"},
      {{"--sparse=256", "a", "b"}, "--sparse: must be 0 or a power of 2 >= 512"},
      {{"--sparse=1000", "a", "b"}, "--sparse: must be 0 or a power of 2 >= 512"},
      {{"--sparse=x", "a", "b"}, "--sparse: not a size: 'x'"},
      {{"--progress=x", "a", "b"}, "--progress: not a number: 'x'"},
      {{"--progress=-1", "a", "b"}, "--progress: must not be negative: '-1'"},
      {{"--progress=3x", "a", "b"}, "--progress: not a number: '3x'"},
      {{"--progress=2147483648", "a", "b"},
       "--progress: number too large: '2147483648' (maximum 2147483647)"},
      {{"--progress=", "a", "b"}, "--progress: missing value after '='"},
      {{"--blkhash=foo", "a", "b"},
       "--blkhash: unknown algorithm 'foo' (expected md5, sha1, sha256 or sha512)"},
      {{"--blkhash=SHA256", "a", "b"},
       "--blkhash: unknown algorithm 'SHA256' (expected md5, sha1, sha256 or sha512)"},
      {{"--blkhash=/64k", "a", "b"},
       "--blkhash: unknown algorithm '' (expected md5, sha1, sha256 or sha512)"},
      {{"--blkhash=sha1/3000", "a", "b"}, "--blkhash: block size must be a power of 2: '3000'"},
      {{"--blkhash=sha1/0", "a", "b"}, "--blkhash: block size must be a power of 2: '0'"},
      {{"--blkhash=sha1/64M", "a", "b"}, "--blkhash: block size must be at most 32M: '64M'"},
      {{"--blkhash=sha1/", "a", "b"}, "--blkhash: empty size"},
      {{"--blkhash=md5/big", "a", "b"}, "--blkhash: not a size: 'big'"},
      {{"--blkhash=", "a", "b"}, "--blkhash: missing value after '='"},
      {{"--blkhash-file=", "a", "b"}, "--blkhash-file: missing value after '='"},
      {{"--request-size=", "a", "b"}, "--request-size: missing value after '='"},
      {{"a", "b", "-C"}, "--connections: requires a value"},
      {{"a", "b", "--connections"}, "--connections: requires a value"},
      {{"a", "b", "-vR"}, "--requests: requires a value"},
      {{"a", "b", "--blkhash-file"}, "--blkhash-file: requires a value"},
      {{"a", "b", "--sparse"}, "--sparse: requires a value"},
      {{"--allocated=1", "a", "b"}, "--allocated: does not take a value"},
      {{"--flush=", "a", "b"}, "--flush: does not take a value"},
      {{"--verbose=yes", "a", "b"}, "--verbose: does not take a value"},
      {{"--help=x"}, "--help: does not take a value"},
      {{"--bogus", "a", "b"}, "--bogus: unknown option"},
      {{"a", "b", "--bogus=3"}, "--bogus: unknown option"},
      {{"--conn=x", "a", "b"}, "--connections: not a number: 'x'"},  // abbreviated
      {{"--flu=1", "a", "b"}, "--flush: does not take a value"},
      {{"--bl", "a", "b"},
       "option '--bl' is ambiguous; possibilities: '--blkhash' '--blkhash-file'"},
      {{"-x", "a", "b"}, "-x: unknown option"},
      {{"-xv", "a", "b"}, "-x: unknown option"},
      {{"-vx", "a", "b"}, "-x: unknown option"},
      {{"-p3", "a", "b"}, "-3: unknown option"},  // -p takes no value
      {{"-1", "a", "b"}, "-1: unknown option"},
      {{"-h", "a", "b"}, "-h: unknown option"},
      {{"-v-", "a", "b"}, "--: unknown option"},  // getopt reads "-" as a letter here
      {{"--verbs", "a", "b"}, "--verbs: unknown option"},
      {{"a", "b", "--conn"}, "--connections: requires a value"},
      {{"--ver", "a", "b"},
       "option '--ver' is ambiguous; possibilities: '--verbose' '--verify' '--version'"},
      {{"--req=8", "a", "b"},
       "option '--req=8' is ambiguous; possibilities: '--request-size' '--requests'"},
      {{"--que=", "a", "b"}, "--queue-size: missing value after '='"},
      {{"--=4", "a", "b"}, "--: unknown option"},
      {{"--target-is-zero=1", "a", "b"}, "--target-is-zero: does not take a value"},
      {{"-C=4", "a", "b"}, "--connections: not a number: '=4'"},
  };
  for (const Rejection& rejection : cases) {
    std::string joined;
    for (const std::string& word : rejection.args) joined += " '" + word + "'";
    SCOPED_TRACE("args:" + joined);
    EXPECT_EQ(ParseError(rejection.args), rejection.message);
  }
}

TEST(CommandLineTest, FirstBadWordWins) {
  // As getopt_long finds them, in command-line order.
  EXPECT_EQ(ParseError({"--bogus", "--allocated=1", "a", "b"}), "--bogus: unknown option");
  EXPECT_EQ(ParseError({"--allocated=1", "--bogus", "a", "b"}),
            "--allocated: does not take a value");
  EXPECT_EQ(ParseError({"-x", "a", "b", "-C"}), "-x: unknown option");
  // Word errors come before value errors, wherever they are.
  EXPECT_EQ(ParseError({"-C", "0", "--bogus", "a", "b"}), "--bogus: unknown option");
}

TEST(CommandLineTest, LongOptionsAbbreviatedAsGetoptLong) {
  EXPECT_EQ(ParseOk({"--conn=2", "a", "b"}).connections, 2u);
  EXPECT_EQ(ParseOk({"--conn", "2", "a", "b"}).connections, 2u);
  EXPECT_EQ(ParseOk({"--c=3", "a", "b"}).connections, 3u);  // libnbd's reading
  EXPECT_EQ(ParseOk({"--thr=2", "--sp=0", "a", "b"}).threads, 2u);
  EXPECT_EQ(ParseOk({"--que=16M", "a", "b"}).queue_size, 16u << 20);
  EXPECT_TRUE(ParseOk({"--sync", "a", "b"}).synchronous);
  EXPECT_TRUE(ParseOk({"--d", "a", "b"}).destination_is_zero);
  EXPECT_TRUE(ParseOk({"--targ", "a", "b"}).destination_is_zero);
  EXPECT_FALSE(ParseOk({"--no-ex", "a", "b"}).extents);
  EXPECT_EQ(ParseOk({"--pro", "a", "b"}).progress, ProgressMode::kBar);
  EXPECT_EQ(ParseOk({"--pro=3", "a", "b"}).progress_fd, 3);
  EXPECT_EQ(ParseOk({"--checkp=cp", "a", "b"}).checkpoint, "cp");
  EXPECT_EQ(ParseOk({"--checksum-f", "x", "--checksum", "a", "b"}).checksum_file, "x");
  EXPECT_EQ(ParseOk({"--blkhash-f", "x", "--blkhash", "a", "b"}).blkhash_file, "x");
  EXPECT_EQ(ParseAction({"--h"}), Action::kHelp);
  EXPECT_EQ(ParseAction({"--vers"}), Action::kVersion);
  EXPECT_EQ(ParseOk({"--fl", "--", "--fl", "b"}).source, Words{"--fl"});
  // The first bad word wins, an ambiguous one as any.
  EXPECT_EQ(ParseError({"--bogus", "--re", "a", "b"}), "--bogus: unknown option");
  EXPECT_EQ(ParseError({"--re", "--bogus", "a", "b"}),
            "option '--re' is ambiguous; possibilities: '--request-size' '--requests' '--retry'");
  EXPECT_EQ(ParseError({"--flush=", "--re", "a", "b"}), "--flush: does not take a value");
  EXPECT_EQ(ParseError({"--ve", "--flush=", "a", "b"}),
            "option '--ve' is ambiguous; possibilities: '--verbose' '--verify' '--version'");
}

TEST(CommandLineTest, BracketedCommandOptionsGetAHint) {
  EXPECT_EQ(ParseError({"src", "[", "qemu-nbd", "-f", "qcow2", "out.qcow2", "]"}),
            "-f: unknown option\noptions of a bracketed command need '--' before the operands: "
            "nbdcopy -- src [ qemu-nbd -f qcow2 out.qcow2 ]");
  EXPECT_EQ(
      ParseError({"-v", "[", "nbdkit", "--filter=cow", "memory", "1G", "]", "dst", "--conn=2"}),
      "--filter: unknown option\noptions of a bracketed command need '--' before the "
      "operands: nbdcopy -v --connections=2 -- [ nbdkit --filter=cow memory 1G ] dst");
  // Words are quoted as a shell reads them back.
  EXPECT_EQ(ParseError({"a b", "[", "c", "-x", "it's", "]"}),
            "-x: unknown option\noptions of a bracketed command need '--' before the operands: "
            "nbdcopy -- 'a b' [ c -x 'it'\\''s' ]");
  // A "--" inside the brackets stays there.
  EXPECT_EQ(ParseError({"a", "[", "c", "-f", "--", "x", "]"}),
            "-f: unknown option\noptions of a bracketed command need '--' before the operands: "
            "nbdcopy -- a [ c -f -- x ]");
  // Not for an unknown option of ours.
  EXPECT_EQ(ParseError({"--bogus", "src", "[", "c", "-f", "]"}), "--bogus: unknown option");
}

TEST(CommandLineTest, DashInAClusterAndEmptyOrFlagValuesAreRefused) {
  // As getopt_long: "-v-flush" is "-v" and the unknown option "-", and
  // "--flag=true" is refused; "--name=" gives no value, also refused.
  EXPECT_EQ(ParseError({"-v-flush", "a", "b"}), "--: unknown option");
  EXPECT_EQ(ParseError({"-v-help"}), "--: unknown option");
  EXPECT_EQ(ParseError({"-pv-", "a", "b"}), "--: unknown option");
  EXPECT_EQ(ParseError({"-C-1", "a", "b"}), "--connections: must not be negative: '-1'");
  EXPECT_EQ(ParseError({"--flush=true", "a", "b"}), "--flush: does not take a value");
  EXPECT_EQ(ParseError({"--help=true"}), "--help: does not take a value");
  EXPECT_EQ(ParseError({"--bogus=", "a", "b"}), "--bogus: unknown option");
  // "{}" after "=" is no value, as CLI11 reads it.
  const Options braces = ParseOk({"--flush={}", "--json={}", "a", "b"});
  EXPECT_TRUE(braces.flush);
  EXPECT_TRUE(braces.json);
  EXPECT_FALSE(braces.json_file);
  // A bad word before the refused one comes first; after "--", operands.
  EXPECT_EQ(ParseError({"--bogus", "--flush=", "a", "b"}), "--bogus: unknown option");
  EXPECT_EQ(ParseError({"-x", "-v-", "a", "b"}), "-x: unknown option");
  EXPECT_EQ(ParseOk({"a", "--", "--flush="}).destination, Words{"--flush="});
  EXPECT_EQ(ParseOk({"--", "-v-", "b"}).source, Words{"-v-"});
  // As the value of the option before, such a word is a value, as in getopt.
  EXPECT_EQ(ParseOk({"--blkhash-file", "--json=", "a", "b"}).blkhash_file, "--json=");
  EXPECT_EQ(ParseError({"-R", "-v-", "a", "b"}), "--requests: not a number: '-v-'");
  EXPECT_EQ(ParseError({"--rate", "--", "-v-", "a", "b"}), "--: unknown option");
}

TEST(CommandLineTest, RepeatedParsesStartAfresh) {
  // getopt_long keeps state between calls: a failed parse may stop inside
  // a cluster ("-xv"), which must not leak into the next one.
  EXPECT_EQ(ParseError({"-xv", "a", "b"}), "-x: unknown option");
  EXPECT_EQ(ParseOk({"-C3", "a", "b"}).connections, 3u);
  EXPECT_EQ(ParseError({"-vC"}), "--connections: requires a value");
  EXPECT_EQ(ParseOk({"a", "-R", "9", "b"}).requests, 9u);
}

TEST(CommandLineTest, OperandOrderSurvivesPosixlyCorrect) {
  // getopt_long stops at the first operand under POSIXLY_CORRECT unless told
  // to return operands in order; options after operands must still work.
  setenv("POSIXLY_CORRECT", "1", 1);
  Options options = ParseOk({"a", "b", "--flush"});
  unsetenv("POSIXLY_CORRECT");
  EXPECT_TRUE(options.flush);
  EXPECT_EQ(options.source, Words{"a"});
  EXPECT_EQ(options.destination, Words{"b"});
}

TEST(CommandLineTest, ValueMayLookLikeAnOption) {
  // Like getopt: a required value is the next word, whatever it is.
  EXPECT_EQ(ParseOk({"--blkhash-file", "--flush", "a", "b"}).blkhash_file, "--flush");
  EXPECT_EQ(ParseOk({"--blkhash-file", "--allocated=x", "a", "b"}).blkhash_file, "--allocated=x");
  EXPECT_EQ(ParseOk({"--blkhash-file=-", "a", "b"}).blkhash_file, "-");
  // Values are taken as they are: no list splitting at ",".
  EXPECT_EQ(ParseOk({"--blkhash-file=[a,b]", "a", "b"}).blkhash_file, "[a,b]");
  EXPECT_EQ(ParseOk({"--blkhash-file", "[x]", "a", "b"}).blkhash_file, "[x]");
  EXPECT_EQ(ParseOk({"[a,b]", "c"}).source, Words{"[a,b]"});
  EXPECT_EQ(ParseError({"-C", "4,5", "a", "b"}), "--connections: not a number: '4,5'");
}

TEST(CommandLineTest, Actions) {
  EXPECT_EQ(ParseAction({"--help"}), Action::kHelp);
  EXPECT_EQ(ParseAction({"-V"}), Action::kVersion);
  EXPECT_EQ(ParseAction({"--version"}), Action::kVersion);
  EXPECT_EQ(ParseAction({"--long-options"}), Action::kLongOptions);
  EXPECT_EQ(ParseAction({"--short-options"}), Action::kShortOptions);
  // Operands are not needed, nor checked.
  EXPECT_EQ(ParseAction({"--version", "a", "b", "c"}), Action::kVersion);
  EXPECT_EQ(ParseAction({"-vV"}), Action::kVersion);
  // The first action wins; options after it are not checked (as upstream,
  // which exits there), but options before it are.
  EXPECT_EQ(ParseAction({"--help", "-V"}), Action::kHelp);
  EXPECT_EQ(ParseAction({"-V", "--help"}), Action::kVersion);
  EXPECT_EQ(ParseAction({"--help", "--request-size=1"}), Action::kHelp);
  EXPECT_EQ(ParseError({"--request-size=1", "--help"}),
            "--request-size: must be a power of 2 from 4096 to 33554432");
  // Unknown options are reported even with --help.
  EXPECT_EQ(ParseError({"--help", "--bogus"}), "--bogus: unknown option");
}

TEST(CommandLineTest, EveryListedOptionParses) {
  // Guards against the lists and the parser drifting apart.
  for (const std::string& name : Lines(LongOptionsText())) {
    SCOPED_TRACE(name);
    Result<CommandLine> result = Parse({name, "4096", "a", "b"});
    if (!result.ok()) {
      EXPECT_EQ(result.status().message().find("unknown option"), std::string::npos)
          << result.status().message();
    }
  }
  for (const std::string& name : Lines(ShortOptionsText())) {
    SCOPED_TRACE(name);
    Result<CommandLine> result = Parse({name, "4096", "a", "b"});
    if (!result.ok()) {
      EXPECT_EQ(result.status().message().find("unknown option"), std::string::npos)
          << result.status().message();
    }
  }
}

}  // namespace
}  // namespace nbdcopy
