#include "cli/option_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace nbdcopy {
namespace {

using Names = std::set<std::string>;

TEST(OptionTableTest, NamesAreUnique) {
  std::set<std::string_view> long_names;
  std::set<char> short_names;
  for (const OptionSpec& spec : OptionTable()) {
    EXPECT_TRUE(long_names.insert(spec.long_name).second) << spec.long_name;
    if (!spec.alias.empty()) {
      EXPECT_TRUE(long_names.insert(spec.alias).second) << spec.alias;
    }
    if (spec.short_name != '\0') {
      EXPECT_TRUE(short_names.insert(spec.short_name).second) << spec.short_name;
    }
  }
}

TEST(OptionTableTest, HelpIsComplete) {
  for (const OptionSpec& spec : OptionTable()) {
    SCOPED_TRACE(std::string(spec.long_name));
    // A value needs a name in --help; a flag has none.
    EXPECT_EQ(spec.value_name.empty(), spec.arg == ArgKind::kNone);
    // Actions share one line without descriptions; every other option has one.
    EXPECT_EQ(spec.help.empty(), spec.group == HelpGroup::kActions);
    // The "{}" a default fills in, and only there.
    EXPECT_EQ(spec.help.find("{}") != std::string_view::npos, spec.shown_default != nullptr);
    EXPECT_NE(spec.apply, nullptr);
  }
}

TEST(OptionTableTest, OptionalValueWithShortFormHasTwoHelpLines) {
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.short_name == '\0' || spec.arg != ArgKind::kOptional) continue;
    // -p has no "=FD" form: --help gives it a line of its own, which needs a
    // second line of description.
    EXPECT_NE(spec.help.find('\n'), std::string_view::npos) << spec.long_name;
  }
}

// "--name" and "-X" of the table's options: all, or those that take the
// next word as their value.
Names TableNames(bool value_required_only = false) {
  Names names;
  for (const OptionSpec& spec : OptionTable()) {
    if (value_required_only && spec.arg != ArgKind::kRequired) continue;
    names.insert(LongName(spec));
    if (!spec.alias.empty()) names.insert("--" + std::string(spec.alias));
    if (spec.short_name != '\0') names.insert(std::string{'-', spec.short_name});
  }
  return names;
}

// Every name of the table in names, and no other.
void ExpectTableNames(const Names& names, const std::string& where, bool value_required_only) {
  const Names table = TableNames(value_required_only);
  for (const std::string& name : table) {
    EXPECT_TRUE(names.contains(name)) << where << " lacks " << name;
  }
  for (const std::string& name : names) {
    EXPECT_TRUE(table.contains(name)) << where << " names " << name << ", not in the option table";
  }
}

std::string SourceFile(const std::string& path) {
  std::ifstream in(std::string(NBDCOPY_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The option names in text: "--name" (also in "--name=") and, when
// short_too, "-X" standing as a word of its own.
Names NamesIn(const std::string& text, bool short_too) {
  static const std::regex kName(R"((?:^|[\s"'|(])(--[a-z][a-z-]*[a-z]|-[A-Za-z])(?![A-Za-z-]))");
  Names names;
  for (std::sregex_iterator it(text.begin(), text.end(), kName), end; it != end; ++it) {
    const std::string name = (*it)[1];
    if (short_too || name[1] == '-') names.insert(name);
  }
  return names;
}

// The bash completion offers every option of the table, knows which take
// the next word as their value, and names no other option.
TEST(OptionTableTest, BashCompletionHasEveryOptionAndNoOther) {
  const std::string script = SourceFile("completions/nbdcopy");
  auto list = [&script](const std::string& variable) {
    const size_t start = script.find("local " + variable + "='");
    EXPECT_NE(start, std::string::npos) << variable;
    const size_t open = script.find('\'', start) + 1;
    return NamesIn(script.substr(open, script.find('\'', open) - open), true);
  };
  Names offered = list("long_options");
  offered.merge(list("short_options"));
  ExpectTableNames(offered, "the completion", false);
  ExpectTableNames(list("with_value"), "the completion's with_value", true);
  // Nor a long option of its own anywhere in its code (short ones there
  // are bash's: compgen -W); its comments may name any ("--opt=value").
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    for (const std::string& name : NamesIn(line, false)) {
      EXPECT_TRUE(TableNames().contains(name)) << "the completion names " << name << ": " << line;
    }
  }
}

// The man page's OPTIONS section has an entry for every option of the
// table, and none for another.
TEST(OptionTableTest, ManPageHasEveryOptionAndNoOther) {
  const std::string page =
      std::regex_replace(SourceFile("docs/nbdcopy.1"), std::regex(R"(\\-)"), "-");
  const size_t start = page.find("\n.SH OPTIONS\n");
  ASSERT_NE(start, std::string::npos);
  const std::string section = page.substr(start, page.find("\n.SH ", start + 1) - start);
  Names entries;  // the names on each entry's first line, after .TP
  for (size_t at = section.find("\n.TP\n"); at != std::string::npos;
       at = section.find("\n.TP\n", at + 1)) {
    const size_t line = at + 5;
    entries.merge(NamesIn(section.substr(line, section.find('\n', line) - line), true));
  }
  ExpectTableNames(entries, "the man page's OPTIONS", false);
}

}  // namespace
}  // namespace nbdcopy
