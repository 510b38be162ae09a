#include "cli/option_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace nbdcopy {
namespace {

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

}  // namespace
}  // namespace nbdcopy
