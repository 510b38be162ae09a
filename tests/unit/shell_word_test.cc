#include "base/shell_word.h"

#include <gtest/gtest.h>

namespace nbdcopy {
namespace {

TEST(ShellWordTest, SafeWordsStayBare) {
  EXPECT_EQ(ShellWord("disk.qcow2"), "disk.qcow2");
  EXPECT_EQ(ShellWord("/tmp/a-b_c+d=e,f:g@h%"), "/tmp/a-b_c+d=e,f:g@h%");
  EXPECT_EQ(ShellWord("["), "[");
  EXPECT_EQ(ShellWord("]"), "]");
}

TEST(ShellWordTest, OtherWordsAreQuoted) {
  EXPECT_EQ(ShellWord(""), "''");
  EXPECT_EQ(ShellWord("my disk.img"), "'my disk.img'");
  EXPECT_EQ(ShellWord("nbd+unix:///?socket=/s"), "'nbd+unix:///?socket=/s'");
  EXPECT_EQ(ShellWord("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellWord("[x"), "'[x'");
}

}  // namespace
}  // namespace nbdcopy
