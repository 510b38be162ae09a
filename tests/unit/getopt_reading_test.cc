#include "cli/getopt_reading.h"

#include <getopt.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace nbdcopy {
namespace {

using Words = std::vector<std::string>;

// An option's place in the table: getopt_long's value for it.
int IdOf(const OptionSpec& spec) { return static_cast<int>(&spec - OptionTable().data()); }

const OptionSpec* SpecNamed(std::string_view name) {
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.long_name == name || (!spec.alias.empty() && spec.alias == name)) return &spec;
  }
  return nullptr;
}

std::vector<std::string> Names(bool upstream_only) {
  std::vector<std::string> names;
  for (const OptionSpec& spec : OptionTable()) {
    if (upstream_only && !spec.upstream) continue;
    names.emplace_back(spec.long_name);
    if (!spec.alias.empty()) names.emplace_back(spec.alias);
  }
  return names;
}

// A getopt_long table of names, each entry's value its option's id, its
// argument as ours (so that getopt's own rule, "same value and argument:
// the same option", is the alias rule).
class GetoptTable {
 public:
  explicit GetoptTable(const std::vector<std::string>& names) : names_(names) {
    for (const std::string& name : names_) {
      const OptionSpec* spec = SpecNamed(name);
      const int has_arg = spec->arg == ArgKind::kNone       ? no_argument
                          : spec->arg == ArgKind::kRequired ? required_argument
                                                            : optional_argument;
      options_.push_back({name.c_str(), has_arg, nullptr, IdOf(*spec)});
    }
    options_.push_back({nullptr, 0, nullptr, 0});
  }

  // The id getopt_long reads "--prefix" as, or -1 (unknown or ambiguous).
  int Read(const std::string& prefix) const {
    // A value after it, for an option that requires one.
    std::string program = "nbdcopy", word = "--" + prefix, value = "1";
    char* argv[] = {program.data(), word.data(), value.data(), nullptr};
    optind = 0;  // glibc: start afresh
    opterr = 0;
    const int got = getopt_long(3, argv, "", options_.data(), nullptr);
    return got == '?' || got == -1 ? -1 : got;
  }

 private:
  std::vector<std::string> names_;
  std::vector<option> options_;
};

TEST(GetoptReadingTest, UpstreamNamesAreLibnbds) {
  // libnbd's copy/main.c long_options[] (1.24).
  const std::set<std::string> libnbd = {
      "help",        "long-options",        "allocated", "blkhash",       "blkhash-file",
      "connections", "destination-is-zero", "flush",     "no-extents",    "progress",
      "queue-size",  "request-size",        "requests",  "short-options", "sparse",
      "synchronous", "target-is-zero",      "threads",   "verbose",       "version",
  };
  const std::vector<std::string> upstream = Names(true);
  EXPECT_EQ(std::set<std::string>(upstream.begin(), upstream.end()), libnbd);
}

// Every prefix of every name, against glibc's getopt_long itself: an exact
// name wins; a prefix upstream's table reads as one option is that option;
// else one of ours; else ambiguous among every option it starts.
TEST(GetoptReadingTest, EveryPrefixOfEveryNameResolvesAsGetoptRules) {
  const GetoptTable upstream(Names(true));
  const GetoptTable ours(Names(false));
  std::set<std::string> prefixes;
  for (const std::string& name : Names(false)) {
    for (size_t length = 1; length <= name.size(); ++length)
      prefixes.insert(name.substr(0, length));
  }
  for (const std::string& prefix : prefixes) {
    SCOPED_TRACE("--" + prefix);
    const LongNameMatch match = MatchLongName(prefix);
    const OptionSpec* exact = SpecNamed(prefix);
    const int expected = exact != nullptr             ? IdOf(*exact)
                         : upstream.Read(prefix) >= 0 ? upstream.Read(prefix)
                                                      : ours.Read(prefix);
    if (expected >= 0) {
      ASSERT_NE(match.spec, nullptr);
      EXPECT_EQ(IdOf(*match.spec), expected);
      EXPECT_TRUE(match.name.starts_with(prefix)) << match.name;
      EXPECT_EQ(SpecNamed(match.name), match.spec);
      continue;
    }
    // Ambiguous: every option the prefix starts, each once, sorted.
    EXPECT_EQ(match.spec, nullptr);
    std::set<int> ids;
    for (const std::string& name : Names(false)) {
      if (name.starts_with(prefix)) ids.insert(IdOf(*SpecNamed(name)));
    }
    EXPECT_GE(ids.size(), 2u);
    EXPECT_EQ(match.candidates.size(), ids.size());
    EXPECT_TRUE(std::is_sorted(match.candidates.begin(), match.candidates.end()));
    for (std::string_view candidate : match.candidates) EXPECT_TRUE(candidate.starts_with(prefix));
  }
}

TEST(GetoptReadingTest, UpstreamMeaningsWinOverOurOwnOptions) {
  EXPECT_EQ(MatchLongName("c").name, "connections");          // not --checkpoint
  EXPECT_EQ(MatchLongName("d").name, "destination-is-zero");  // not --dirty-bitmap
  EXPECT_EQ(MatchLongName("checkp").name, "checkpoint");
  EXPECT_EQ(MatchLongName("ch").spec, nullptr);           // --checkpoint or --checksum
  EXPECT_EQ(MatchLongName("checksum").name, "checksum");  // exact wins
  EXPECT_EQ(MatchLongName("checksum-").name, "checksum-file");
  EXPECT_EQ(MatchLongName("ta").name, "target-is-zero");
  EXPECT_EQ(MatchLongName("blkhash").name, "blkhash");  // exact wins
  EXPECT_EQ(MatchLongName("blkhash-").name, "blkhash-file");
  EXPECT_EQ(MatchLongName("bogus").spec, nullptr);
  EXPECT_TRUE(MatchLongName("bogus").candidates.empty());
  EXPECT_EQ(MatchLongName("").spec, nullptr);
}

Words Permuted(const Words& args) {
  Result<Words> words = ReadAsGetoptLong(args);
  EXPECT_TRUE(words.ok()) << words.status().message();
  return words.ok() ? *words : Words{"(refused)"};
}

std::string Refusal(const Words& args) {
  Result<Words> words = ReadAsGetoptLong(args);
  EXPECT_FALSE(words.ok());
  return words.ok() ? "(read)" : words.status().message();
}

TEST(GetoptReadingTest, OptionsFirstSpelledOutThenTheOperands) {
  EXPECT_EQ(Permuted({"--conn=2", "--pro", "a", "--que", "16M", "b", "--sync"}),
            (Words{"--connections=2", "--progress", "--queue-size", "16M", "--synchronous", "--",
                   "a", "b"}));
  // Values of the option before, whatever they look like, stay.
  EXPECT_EQ(Permuted({"--blkhash-file", "--fl", "-C", "--fl", "-vR", "--fl", "-T4", "--fl"}),
            (Words{"--blkhash-file", "--fl", "-C", "--fl", "-vR", "--fl", "-T4", "--flush", "--"}));
  EXPECT_EQ(Permuted({"--blkhash-file", "--json=", "-R", "-v-", "a"}),
            (Words{"--blkhash-file", "--json=", "-R", "-v-", "--", "a"}));
  // "--progress" takes its value only after "=".
  EXPECT_EQ(Permuted({"--pro", "--fl", "3"}), (Words{"--progress", "--flush", "--", "3"}));
  // After "--", operands; a "--" that is a value does not end the options.
  EXPECT_EQ(Permuted({"--fl", "--", "--fl", "--"}), (Words{"--flush", "--", "--fl", "--"}));
  EXPECT_EQ(Permuted({"-C", "--", "--fl"}), (Words{"-C", "--", "--flush", "--"}));
  // Inside "[ CMD ARGS ]" our full names are still options.
  EXPECT_EQ(Permuted({"[", "cmd", "--flush", "-C", "3", "]", "--fl"}),
            (Words{"--flush", "-C", "3", "--flush", "--", "[", "cmd", "]"}));
  EXPECT_EQ(Permuted({"a", "[", "c", "--", "x", "]"}), (Words{"--", "a", "[", "c", "x", "]"}));
}

TEST(GetoptReadingTest, FirstBadWordIsRefused) {
  EXPECT_EQ(Refusal({"--fl", "--ve", "a", "--re"}),
            "option '--ve' is ambiguous; possibilities: '--verbose' '--verify' '--version'");
  EXPECT_EQ(Refusal({"--re=8"}),
            "option '--re=8' is ambiguous; possibilities: '--request-size' '--requests' '--retry'");
  // glibc's words name the word as typed, "=" and all.
  EXPECT_EQ(Refusal({"--t="}),
            "option '--t=' is ambiguous; possibilities: '--target-is-zero' "
            "'--threads' '--timeout'");
  EXPECT_EQ(Refusal({"--blkh"}),
            "option '--blkh' is ambiguous; possibilities: '--blkhash' '--blkhash-file'");
  EXPECT_EQ(Refusal({"-vx", "--bogus"}), "-x: unknown option");
  EXPECT_EQ(Refusal({"--bogus=1", "-x"}), "--bogus: unknown option");
  EXPECT_EQ(Refusal({"--flu=1"}), "--flush: does not take a value");
  EXPECT_EQ(Refusal({"--targ=1"}), "--target-is-zero: does not take a value");
  EXPECT_EQ(Refusal({"--json="}), "--json: missing value after '='");
  EXPECT_EQ(Refusal({"a", "-vR"}), "--requests: requires a value");
  EXPECT_TRUE(ReadAsGetoptLong({"--", "a", "[", "b", "--json="}).ok());
  EXPECT_EQ(Refusal({"-v-"}), "--: unknown option");  // getopt reads "-" as a letter here
  // "{}" after "=" is no value, as CLI11 reads it.
  EXPECT_EQ(Permuted({"--flush={}"}), (Words{"--flush={}", "--"}));
}

TEST(GetoptReadingTest, UnknownOptionOfABracketedCommandGetsTheLineWithEndMarker) {
  EXPECT_EQ(Refusal({"-v", "src", "[", "qemu-nbd", "-f", "qcow2", "out", "]", "--conn", "2"}),
            "-f: unknown option\noptions of a bracketed command need '--' before the operands: "
            "nbdcopy -v --connections 2 -- src [ qemu-nbd -f qcow2 out ]");
  // Our options inside the brackets stay there, and so does a "--".
  EXPECT_EQ(Refusal({"a", "[", "c", "-v", "--fl", "--", "-x", "]"}),
            "--fl: unknown option\noptions of a bracketed command need '--' before the operands: "
            "nbdcopy -- a [ c -v --fl -- -x ]");
  // Not for an unknown option outside the brackets, even of the same name.
  EXPECT_EQ(Refusal({"-f", "src", "[", "c", "-f", "]"}), "-f: unknown option");
  EXPECT_TRUE(ReadAsGetoptLong({"--", "a", "[", "c", "-f", "]"}).ok());
}

}  // namespace
}  // namespace nbdcopy
