// RealFileSystem on a temporary directory: what the interface promises
// (tests/support/memory_file_system.h fakes the same promises).
#include "base/file_system.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace nbdcopy {
namespace {

using Step = FileError::Step;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/nbdcopy-fs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string dir_;
  FileSystem& files_ = RealFileSystem();
};

TEST_F(FileSystemTest, ReadWholeRegularOnlyOrAnything) {
  std::string text;
  FileError error = files_.ReadWhole(Path("none"), true, &text);
  EXPECT_EQ(error.step, Step::kOpen);
  EXPECT_EQ(error.error, ENOENT);
  ASSERT_FALSE(files_.WriteWhole(Path("a"), std::string(100000, 'x')).failed());
  EXPECT_FALSE(files_.ReadWhole(Path("a"), true, &text).failed());
  EXPECT_EQ(text, std::string(100000, 'x'));
  EXPECT_EQ(files_.ReadWhole(dir_, true, &text).error, EISDIR);
  EXPECT_EQ(files_.ReadWhole(dir_, false, &text).error, EISDIR);
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(files_.ReadWhole(Path("fifo"), true, &text).step, Step::kNotRegular);  // no hang
  EXPECT_FALSE(files_.ReadWhole("/dev/null", false, &text).failed());
  EXPECT_EQ(text, "");
}

TEST_F(FileSystemTest, WriteWholeTruncatesWithTheNewFileMode) {
  ASSERT_FALSE(files_.WriteWhole(Path("a"), "long text\n").failed());
  ASSERT_FALSE(files_.WriteWhole(Path("a"), "short\n").failed());
  EXPECT_EQ(Contents(Path("a")), "short\n");
  struct stat st;
  ASSERT_EQ(stat(Path("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0002, 0u);  // others never write
  FileError error = files_.WriteWhole(Path("no/such"), "x");
  EXPECT_EQ(error.step, Step::kOpen);
  EXPECT_EQ(error.error, ENOENT);
  // A full device: the short write is an error, not ignored.
  error = files_.WriteWhole("/dev/full", "x");
  EXPECT_EQ(error.step, Step::kWrite);
  EXPECT_EQ(error.error, ENOSPC);
}

TEST_F(FileSystemTest, ReplaceAtomicallyLeavesNoTemporary) {
  const std::string path = Path("ck.map");
  ASSERT_FALSE(files_.WriteWhole(path + ".tmp", "stale").failed());
  ASSERT_FALSE(files_.ReplaceAtomically(path, "one\n").failed());
  ASSERT_FALSE(files_.ReplaceAtomically(path, "two\n").failed());
  EXPECT_EQ(Contents(path), "two\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  // Renaming over a directory fails: the temporary is removed.
  ASSERT_TRUE(std::filesystem::create_directory(Path("dir")));
  ASSERT_TRUE(std::filesystem::create_directory(Path("dir/inside")));
  FileError error = files_.ReplaceAtomically(Path("dir"), "x");
  EXPECT_EQ(error.step, Step::kRename);
  EXPECT_EQ(error.path, Path("dir.tmp"));
  EXPECT_FALSE(std::filesystem::exists(Path("dir.tmp")));
  error = files_.ReplaceAtomically(Path("no/such"), "x");
  EXPECT_EQ(error.step, Step::kOpen);
  EXPECT_EQ(error.path, Path("no/such.tmp"));
}

TEST_F(FileSystemTest, ProbeCreateLeavesNothing) {
  EXPECT_FALSE(files_.ProbeCreate(Path("p.tmp")).failed());
  EXPECT_FALSE(std::filesystem::exists(Path("p.tmp")));
  EXPECT_EQ(files_.ProbeCreate(Path("no/p.tmp")).error, ENOENT);
}

}  // namespace
}  // namespace nbdcopy
