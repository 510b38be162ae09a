#include "cli/long_option_names.h"

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

std::vector<std::string> OurNames() {
  std::vector<std::string> names;
  for (const OptionSpec& spec : OptionTable()) {
    names.emplace_back(spec.long_name);
    if (!spec.alias.empty()) names.emplace_back(spec.alias);
  }
  return names;
}

std::vector<std::string> UpstreamNames() {
  return {UpstreamLongNames().begin(), UpstreamLongNames().end()};
}

TEST(LongOptionNamesTest, UpstreamNamesAreOurs) {
  for (std::string_view name : UpstreamLongNames()) EXPECT_NE(SpecNamed(name), nullptr) << name;
}

// Every prefix of every name, against glibc's getopt_long itself: an exact
// name wins; a prefix upstream's table reads as one option is that option;
// else one of ours; else ambiguous among every option it starts.
TEST(LongOptionNamesTest, EveryPrefixOfEveryNameResolvesAsGetoptRules) {
  const GetoptTable upstream(UpstreamNames());
  const GetoptTable ours(OurNames());
  std::set<std::string> prefixes;
  for (const std::string& name : OurNames()) {
    for (size_t length = 1; length <= name.size(); ++length)
      prefixes.insert(name.substr(0, length));
  }
  for (const std::string& prefix : prefixes) {
    SCOPED_TRACE("--" + prefix);
    const LongNameMatch match = MatchLongName(OptionTable(), prefix);
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
    for (const std::string& name : OurNames()) {
      if (name.starts_with(prefix)) ids.insert(IdOf(*SpecNamed(name)));
    }
    EXPECT_GE(ids.size(), 2u);
    EXPECT_EQ(match.candidates.size(), ids.size());
    EXPECT_TRUE(std::is_sorted(match.candidates.begin(), match.candidates.end()));
    for (std::string_view candidate : match.candidates) EXPECT_TRUE(candidate.starts_with(prefix));
  }
}

TEST(LongOptionNamesTest, UpstreamMeaningsWinOverOurOwnOptions) {
  EXPECT_EQ(MatchLongName(OptionTable(), "c").name, "connections");          // not --checkpoint
  EXPECT_EQ(MatchLongName(OptionTable(), "d").name, "destination-is-zero");  // not --dirty-bitmap
  EXPECT_EQ(MatchLongName(OptionTable(), "checkp").name, "checkpoint");
  EXPECT_EQ(MatchLongName(OptionTable(), "ch").spec, nullptr);  // --checkpoint or --checksum
  EXPECT_EQ(MatchLongName(OptionTable(), "checksum").name, "checksum");  // exact wins
  EXPECT_EQ(MatchLongName(OptionTable(), "checksum-").name, "checksum-file");
  EXPECT_EQ(MatchLongName(OptionTable(), "ta").name, "target-is-zero");
  EXPECT_EQ(MatchLongName(OptionTable(), "blkhash").name, "blkhash");  // exact wins
  EXPECT_EQ(MatchLongName(OptionTable(), "blkhash-").name, "blkhash-file");
  EXPECT_EQ(MatchLongName(OptionTable(), "bogus").spec, nullptr);
  EXPECT_TRUE(MatchLongName(OptionTable(), "bogus").candidates.empty());
  EXPECT_EQ(MatchLongName(OptionTable(), "").spec, nullptr);
}

TEST(LongOptionNamesTest, AmbiguityInGlibcWords) {
  EXPECT_EQ(AmbiguousMessage("--re=8", MatchLongName(OptionTable(), "re")),
            "option '--re=8' is ambiguous; possibilities: '--request-size' '--requests' "
            "'--retry'");
  EXPECT_EQ(AmbiguousMessage("--blkh", MatchLongName(OptionTable(), "blkh")),
            "option '--blkh' is ambiguous; possibilities: '--blkhash' '--blkhash-file'");
  EXPECT_EQ(AmbiguousMessage("--t", MatchLongName(OptionTable(), "t")),
            "option '--t' is ambiguous; possibilities: '--target-is-zero' '--threads' "
            "'--timeout'");
}

Words Spelled(const Words& args) { return SpellOutLongOptions(OptionTable(), args).words; }

TEST(LongOptionNamesTest, SpellsOutOptionWordsOnly) {
  EXPECT_EQ(
      Spelled({"--conn=2", "--pro", "a", "--que", "16M", "b", "--sync"}),
      (Words{"--connections=2", "--progress", "a", "--queue-size", "16M", "b", "--synchronous"}));
  EXPECT_EQ(Spelled({"--pro=3", "--c=4", "--flu="}),
            (Words{"--progress=3", "--connections=4", "--flush="}));
  // Values of the option before, whatever they look like, stay.
  EXPECT_EQ(Spelled({"--blkhash-file", "--fl", "-C", "--fl", "-vR", "--fl", "-T4", "--fl"}),
            (Words{"--blkhash-file", "--fl", "-C", "--fl", "-vR", "--fl", "-T4", "--flush"}));
  EXPECT_EQ(Spelled({"--blkh-file", "x"}), (Words{"--blkh-file", "x"}));  // unknown
  // "--progress" takes its value only after "=".
  EXPECT_EQ(Spelled({"--pro", "--fl"}), (Words{"--progress", "--flush"}));
  // After "--", and inside "[ CMD ARGS ]", operands.
  EXPECT_EQ(Spelled({"--fl", "--", "--fl"}), (Words{"--flush", "--", "--fl"}));
  EXPECT_EQ(Spelled({"[", "cmd", "--fl", "]", "--fl"}),
            (Words{"[", "cmd", "--fl", "]", "--flush"}));
}

TEST(LongOptionNamesTest, FirstAmbiguousWordIsRefused) {
  SpelledOutWords spelled = SpellOutLongOptions(OptionTable(), {"--fl", "--ve", "a", "--re"});
  EXPECT_EQ(spelled.refused_at, 1u);
  EXPECT_EQ(spelled.refusal.message(),
            "option '--ve' is ambiguous; possibilities: '--verbose' '--verify' '--version'");
  EXPECT_EQ(SpellOutLongOptions(OptionTable(), {"--fl", "a"}).refused_at, 2u);
  EXPECT_EQ(SpellOutLongOptions(OptionTable(), {"--", "--re"}).refused_at, 2u);
}

TEST(LongOptionNamesTest, BracketedOptionsAndTheLineWithEndMarker) {
  SpelledOutWords spelled = SpellOutLongOptions(
      OptionTable(), {"-v", "src", "[", "qemu-nbd", "-f", "qcow2", "out", "]", "--conn", "2"});
  EXPECT_EQ(spelled.bracketed_options, Words{"-f"});
  EXPECT_EQ(spelled.with_end_marker, (Words{"-v", "--connections", "2", "--", "src", "[",
                                            "qemu-nbd", "-f", "qcow2", "out", "]"}));
  EXPECT_EQ(
      SpellOutLongOptions(OptionTable(), {"a", "[", "c", "-f", "--", "x", "]"}).with_end_marker,
      (Words{"--", "a", "[", "c", "-f", "--", "x", "]"}));
  EXPECT_TRUE(SpellOutLongOptions(OptionTable(), {"--", "a", "[", "c", "-f", "]"})
                  .bracketed_options.empty());
}

}  // namespace
}  // namespace nbdcopy
