#include "job/checkpoint_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "nbdcopy_version.h"

namespace nbdcopy {
namespace {

using Range = RangeSet::Range;

CheckpointIdentity SomeIdentity(uint64_t size = 1 << 20) {
  CheckpointIdentity identity;
  identity.source = "nbd+unix:///?socket=/tmp/src.sock";
  identity.destination = "out.img";
  identity.source_size = size;
  identity.settings = "allocated=no sparse=4096 destination-is-zero=no dirty-bitmap=-";
  identity.fingerprint = "sha256:ab12cd34";
  return identity;
}

void ExpectRoundTrip(const CheckpointIdentity& identity, const RangeSet& done) {
  const std::string text = RenderCheckpoint(identity, done);
  Result<CheckpointState> parsed = ParseCheckpoint(text, "ck.map");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
  EXPECT_EQ(parsed->identity, identity) << text;
  EXPECT_EQ(parsed->done, done) << text;
}

// The message ParseCheckpoint gives for text, or "" if it parses.
std::string ParseError(const std::string& text) {
  Result<CheckpointState> parsed = ParseCheckpoint(text, "ck.map");
  return parsed.ok() ? "" : parsed.status().message();
}

// The identity lines RenderCheckpoint writes for SomeIdentity(size).
std::string Heading(uint64_t size = 4096) {
  std::string text = RenderCheckpoint(SomeIdentity(size), RangeSet());
  return text.substr(0, text.find("# current_pos"));
}

TEST(CheckpointFileTest, RendersAMapfileWithIdentityStatusAndBlocks) {
  RangeSet done;
  done.Add(0, 0x1000);
  done.Add(0x3000, 0x1000);
  const std::string text = RenderCheckpoint(SomeIdentity(0x5000), done);
  const std::string expected =
      "# Mapfile. Created by nbdcopy " NBDCOPY_VERSION
      " (--checkpoint)\n"
      "# nbdcopy-source: nbd+unix:///?socket=/tmp/src.sock\n"
      "# nbdcopy-destination: out.img\n"
      "# nbdcopy-size: 20480\n"
      "# nbdcopy-settings: allocated=no sparse=4096 destination-is-zero=no dirty-bitmap=-\n"
      "# nbdcopy-fingerprint: sha256:ab12cd34\n"
      "# current_pos  current_status  current_pass\n"
      "0x00001000     ?               1\n"
      "#      pos        size  status\n"
      "0x00000000  0x00001000  +\n"
      "0x00001000  0x00002000  ?\n"
      "0x00003000  0x00001000  +\n"
      "0x00004000  0x00001000  ?\n";
  EXPECT_EQ(text, expected);
}

TEST(CheckpointFileTest, FinishedFileSaysSoInTheStatusLine) {
  RangeSet done;
  done.Add(0, 1000);
  const std::string text = RenderCheckpoint(SomeIdentity(1000), done);
  EXPECT_NE(text.find("\n0x000003E8     +               1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n0x00000000  0x000003E8  +\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("  ?\n"), std::string::npos) << text;
}

TEST(CheckpointFileTest, ZeroSizeHasNoBlocksAndIsFinished) {
  const std::string text = RenderCheckpoint(SomeIdentity(0), RangeSet());
  EXPECT_TRUE(text.ends_with("0x00000000     +               1\n#      pos        size  status\n"))
      << text;
  ExpectRoundTrip(SomeIdentity(0), RangeSet());
}

TEST(CheckpointFileTest, DoneBytesPastTheSizeAreIgnored) {
  RangeSet done;
  done.Add(100, 1000);
  RangeSet clipped;
  clipped.Add(100, 400);
  Result<CheckpointState> parsed = ParseCheckpoint(RenderCheckpoint(SomeIdentity(500), done), "f");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->done, clipped);
}

TEST(CheckpointFileTest, RoundTripsEmptyFullAndManyRuns) {
  ExpectRoundTrip(SomeIdentity(), RangeSet());
  RangeSet all;
  all.Add(0, 1 << 20);
  ExpectRoundTrip(SomeIdentity(), all);
  std::mt19937_64 random(7);
  for (int round = 0; round < 50; ++round) {
    const uint64_t size = 1 + random() % (uint64_t{1} << (1 + round % 62));
    RangeSet done;
    for (int i = 0; i < 40; ++i) {
      const uint64_t offset = random() % size;
      done.Add(offset, 1 + random() % (size - offset));
    }
    ExpectRoundTrip(SomeIdentity(size), done);
  }
  RangeSet odd;  // a size no power of 2 divides, a run at the very end
  odd.Add(1, 2);
  odd.Add(1000, 1);
  ExpectRoundTrip(SomeIdentity(1001), odd);
  ExpectRoundTrip(SomeIdentity(UINT64_MAX), odd);
}

TEST(CheckpointFileTest, RoundTripsAnyIdentityString) {
  CheckpointIdentity identity = SomeIdentity();
  identity.source = "a\nb\r\n#c\\n \t\x01\x7f end ";
  identity.destination = " leading and trailing spaces  ";
  identity.settings = "naïve ☃ 日本 \xff\xfe";
  identity.fingerprint = std::string("nul\0byte\\x41", 12);
  identity.source_file = "/a\nb/ c ";
  identity.destination_file = "\\";
  ExpectRoundTrip(identity, RangeSet());
  identity = CheckpointIdentity{"", "", 7, "", "", "", ""};
  ExpectRoundTrip(identity, RangeSet());
  identity = CheckpointIdentity{" ", "\\", 7, "\\\\", "#", " ", "#"};
  ExpectRoundTrip(identity, RangeSet());
  // Each value stays on its own comment line.
  identity = SomeIdentity();
  identity.source = "x\n0 + 1\n0 99 +";
  const std::string text = RenderCheckpoint(identity, RangeSet());
  EXPECT_NE(text.find("# nbdcopy-source: x\\n0 + 1\\n0 99 +\n"), std::string::npos) << text;
}

TEST(CheckpointFileTest, ToleratesWhatHumansAndDdrescuelogDo) {
  const std::string text = Heading(24) +
                           "# a human's note\r\n"
                           "\n"
                           "  0x8   ?\r\n"                   // no pass, CRLF
                           "0 010 +   # octal, as in C++\n"  // [0, 8)
                           "8 0x4 +\n"                       // adjacent '+' blocks
                           "0XC 4 *\n"
                           "16 4 /\n"
                           "20 0x4 -\n";
  Result<CheckpointState> parsed = ParseCheckpoint(text, "ck.map");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->done.Runs(), (std::vector<Range>{{0, 12}}));
  EXPECT_EQ(parsed->identity, SomeIdentity(24));
  // Blanks an editor adds at the end of identity lines change nothing.
  std::string edited = RenderCheckpoint(SomeIdentity(24), RangeSet());
  for (size_t at = 0; (at = edited.find('\n', at)) != std::string::npos; at += 3) {
    edited.insert(at, " \t");
  }
  parsed = ParseCheckpoint(edited, "ck.map");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->identity, SomeIdentity(24));
}

TEST(CheckpointFileTest, RefusesFilesNbdcopyDidNotWrite) {
  EXPECT_EQ(ParseError(""), "ck.map: not a checkpoint written by nbdcopy");
  EXPECT_EQ(ParseError("\177ELF\1\2 garbage\n\0\0\0"),
            "ck.map: not a checkpoint written by nbdcopy");
  EXPECT_EQ(ParseError("# Mapfile. Created by GNU ddrescue\n0 + 1\n0 0x10 +\n"),
            "ck.map: not a checkpoint written by nbdcopy");
  std::string text = RenderCheckpoint(SomeIdentity(16), RangeSet());
  text.erase(text.find("# nbdcopy-fingerprint"),
             text.find("# current_pos") - text.find("# nbdcopy-fingerprint"));
  EXPECT_EQ(ParseError(text),
            "ck.map: not a checkpoint written by nbdcopy (it has no nbdcopy-fingerprint line)");
}

TEST(CheckpointFileTest, RefusesBadIdentityLines) {
  const std::string heading = Heading(16);  // 6 lines
  EXPECT_EQ(ParseError(heading + "# nbdcopy-source: again\n0 ? 1\n0 16 ?\n"),
            "ck.map: line 7: a second nbdcopy-source line (the first is line 2)");
  EXPECT_EQ(ParseError("# nbdcopy-source: bad\\q\n" + heading),
            "ck.map: line 1: nbdcopy-source: a backslash that starts no escape "
            "(\\\\ \\n \\r \\t \\xHH)");
  EXPECT_EQ(ParseError("# nbdcopy-destination: x\\x4\n" + heading).substr(0, 40),
            "ck.map: line 1: nbdcopy-destination: a b");
  std::string text = heading;
  text.replace(text.find("size: 16"), 8, "size: 1x6");
  EXPECT_EQ(ParseError(text + "0 ? 1\n0 16 ?\n"),
            "ck.map: line 4: nbdcopy-size: '1x6' is not a number");
  text = heading;
  text.replace(text.find("size: 16"), 8, "size: 18446744073709551616");
  EXPECT_EQ(ParseError(text + "0 ? 1\n"),
            "ck.map: line 4: nbdcopy-size: '18446744073709551616' is too large");
}

TEST(CheckpointFileTest, RefusesBadStatusLines) {
  const std::string h = Heading(16);  // 6 lines; the status line is line 7
  EXPECT_EQ(ParseError(h), "ck.map: line 6: the file ends before the status line");
  const std::string expected = " (expected: current_pos current_status [current_pass])";
  EXPECT_EQ(ParseError(h + "0\n"), "ck.map: line 7: a status line without a status" + expected);
  EXPECT_EQ(ParseError(h + "0 ? 1 x\n"),
            "ck.map: line 7: a status line with extra words" + expected);
  EXPECT_EQ(ParseError(h + "zz ? 1\n"), "ck.map: line 7: current_pos: 'zz' is not a number");
  EXPECT_EQ(ParseError(h + "0 x 1\n"),
            "ck.map: line 7: 'x' is not a current_status (one of ?*/-FG+)");
  EXPECT_EQ(ParseError(h + "0 ? 0\n"),
            "ck.map: line 7: current_pass '0' is not a positive decimal");
  EXPECT_EQ(ParseError(h + "0 ? 0x1\n"),
            "ck.map: line 7: current_pass '0x1' is not a positive decimal");
  EXPECT_EQ(ParseError(h + "0 ? 1\n0 16 ?\n"), "");
}

TEST(CheckpointFileTest, RefusesBadBlocks) {
  const std::string h = Heading(16) + "0 ? 1\n";  // blocks start at line 8
  EXPECT_EQ(ParseError(h + "0 16\n"),
            "ck.map: line 8: a block line needs 3 words (pos size status), not 2");
  EXPECT_EQ(ParseError(h + "0 16 + 5\n"),
            "ck.map: line 8: a block line needs 3 words (pos size status), not 4");
  EXPECT_EQ(ParseError(h + "0 16 +#x\n"),
            "ck.map: line 8: '+#x' is not a block status (one of ?*/-+)");
  EXPECT_EQ(ParseError(h + "-0 16 +\n"), "ck.map: line 8: pos: '-0' is not a number");
  EXPECT_EQ(ParseError(h + "0 08 +\n"), "ck.map: line 8: size: '08' is not a number");
  EXPECT_EQ(ParseError(h + "0 0x +\n"), "ck.map: line 8: size: '0x' is not a number");
  EXPECT_EQ(ParseError(h + "0 16 F\n"), "ck.map: line 8: 'F' is not a block status (one of ?*/-+)");
  EXPECT_EQ(ParseError(h + "0 0 +\n0 16 +\n"), "ck.map: line 8: an empty block at 0x00000000");
  EXPECT_EQ(ParseError(h + "8 8 +\n"),
            "ck.map: line 8: the first block starts at 0x00000008, "
            "not at 0 (blocks must be sorted and contiguous)");
  EXPECT_EQ(ParseError(h + "0 8 +\n9 7 ?\n"),
            "ck.map: line 9: a gap between 0x00000008 and 0x00000009 (blocks must be sorted and "
            "contiguous)");
  EXPECT_EQ(ParseError(h + "0 8 +\n4 12 ?\n"),
            "ck.map: line 9: the block at 0x00000004 overlaps the one before, which ends at "
            "0x00000008 (blocks must be sorted and contiguous)");
  EXPECT_EQ(ParseError(h + "0 0x10000000000000000 +\n"),
            "ck.map: line 8: size: '0x10000000000000000' is too large");
  // Read left to right (as ddrescuelog does): an overflow before a bad
  // digit is "too large", a bad digit first "not a number".
  EXPECT_EQ(ParseError(h + "0 0x10000000000000000g +\n"),
            "ck.map: line 8: size: '0x10000000000000000g' is too large");
  EXPECT_EQ(ParseError(h + "0 0xg0000000000000000 +\n"),
            "ck.map: line 8: size: '0xg0000000000000000' is not a number");
  EXPECT_EQ(ParseError(h + "0\v16\f+\n"), "");  // \v and \f are blanks here, not in --ranges
  EXPECT_EQ(ParseError(h + "0 8 +\n8 0xFFFFFFFFFFFFFFFF +\n"),
            "ck.map: line 9: the block at 0x00000008 ends past 2^64");
  EXPECT_EQ(ParseError(h + "0 8 +\n8 9 +\n"),
            "ck.map: line 9: the block ends at 0x00000011, past nbdcopy-size 16 (0x00000010)");
  EXPECT_EQ(ParseError(h + "0 8 +\n"),
            "ck.map: line 8: the blocks end at 0x00000008, before nbdcopy-size 16 (0x00000010)");
  EXPECT_EQ(ParseError(h),
            "ck.map: line 7: the blocks end at 0x00000000, before nbdcopy-size "
            "16 (0x00000010)");
  // The first error wins, even with identity lines after it.
  EXPECT_EQ(ParseError("0 ? 1\n0 8 x\n" + Heading(8)),
            "ck.map: line 2: 'x' is not a block status (one of ?*/-+)");
}

// CompareIdentity's message between "--checkpoint=ck.map: " and
// "; remove ck.map to copy from the start", or why it is not so.
std::string Refusal(const CheckpointIdentity& recorded, const CheckpointIdentity& now) {
  const std::string start = "--checkpoint=ck.map: ", end = "; remove ck.map to copy from the start";
  const Status status = CompareIdentity(recorded, now, "ck.map");
  if (status.ok()) return "(accepted)";
  const std::string& message = status.message();
  if (!message.starts_with(start) || !message.ends_with(end)) return "(badly framed) " + message;
  return message.substr(start.size(), message.size() - start.size() - end.size());
}

TEST(CheckpointFileTest, CompareIdentityAcceptsOnlyTheSameCopy) {
  const CheckpointIdentity recorded = SomeIdentity(1048576);
  EXPECT_EQ(Refusal(recorded, recorded), "(accepted)");
  CheckpointIdentity now = recorded;
  now.source_size = 2097152;
  now.fingerprint = "sha256:other";  // the size is named first
  EXPECT_EQ(Refusal(recorded, now),
            "the source's size differs (the checkpoint was made for "
            "1048576 bytes, the source has 2097152)");
  now = recorded;
  now.fingerprint = "sha256:other";
  now.source = "b.img";
  EXPECT_EQ(Refusal(recorded, now),
            "the source's content differs from when the checkpoint was "
            "made (fingerprint 'sha256:ab12cd34' then, 'sha256:other' now)");
  now = recorded;
  now.source = "b.img";
  now.destination = "c.img";
  EXPECT_EQ(Refusal(recorded, now),
            "it was made for source 'nbd+unix:///?socket=/tmp/src.sock', not 'b.img'");
  now = recorded;
  now.destination = "new\nline";
  now.settings = "x";
  EXPECT_EQ(Refusal(recorded, now), "it was made for destination 'out.img', not 'new\\nline'");
  now = recorded;
  now.settings = "allocated=no sparse=0 destination-is-zero=yes dirty-bitmap=-";
  EXPECT_EQ(Refusal(recorded, now),
            "it was made with other settings ('sparse=4096' then, 'sparse=0' now)");
  now.settings = recorded.settings + " extra=1";
  EXPECT_EQ(Refusal(recorded, now), "it was made with other settings ((none) then, 'extra=1' now)");
  now.settings = "allocated=no  sparse=4096 destination-is-zero=no dirty-bitmap=-";
  EXPECT_EQ(Refusal(recorded, now), "it was made with other settings ('" + recorded.settings +
                                        "' then, '" + now.settings + "' now)");
}

TEST(CheckpointFileTest, AFileOperandMatchesAnySpellingOfTheSameFile) {
  CheckpointIdentity recorded = SomeIdentity();
  recorded.source = "a.raw";
  recorded.source_file = "/w/a.raw";
  recorded.destination_file = "/w/out.img";
  CheckpointIdentity now = recorded;
  for (const char* spelling : {"./a.raw", "/w/a.raw", "../w/a.raw"}) {
    now.source = spelling;
    EXPECT_EQ(Refusal(recorded, now), "(accepted)") << spelling;
  }
  now.destination = "./out.img";
  EXPECT_EQ(Refusal(recorded, now), "(accepted)");
  now = recorded;
  now.source = "b.raw";
  now.source_file = "/w/b.raw";
  EXPECT_EQ(Refusal(recorded, now),
            "it was made for source 'a.raw' ('/w/a.raw'), not 'b.raw' ('/w/b.raw')");
  // Another file under the same words: the fingerprint decides (it is
  // compared first), as for any operand.
  now.source = "a.raw";
  EXPECT_EQ(Refusal(recorded, now), "(accepted)");
  now = recorded;
  now.destination = "/v/out.img";
  now.destination_file = "/v/out.img";
  EXPECT_EQ(Refusal(recorded, now),
            "it was made for destination 'out.img' ('/w/out.img'), not '/v/out.img'");
  // No file known on one side (an unresolvable path): the words decide.
  now = recorded;
  now.source = "./a.raw";
  now.source_file = "";
  EXPECT_EQ(Refusal(recorded, now), "it was made for source 'a.raw' ('/w/a.raw'), not './a.raw'");
  recorded.source_file = "";
  EXPECT_EQ(Refusal(recorded, recorded), "(accepted)");
}

TEST(CheckpointFileTest, FileLinesAreWrittenOnlyForLocalPathsAndOlderFilesHaveNone) {
  CheckpointIdentity identity = SomeIdentity();
  EXPECT_EQ(RenderCheckpoint(identity, RangeSet()).find("-file:"), std::string::npos);
  identity.source = "./a b.raw";
  identity.source_file = "/w/a b.raw";
  identity.destination_file = "/w/new\nline";
  const std::string text = RenderCheckpoint(identity, RangeSet());
  EXPECT_NE(text.find("# nbdcopy-source: ./a b.raw\n# nbdcopy-source-file: /w/a b.raw\n"
                      "# nbdcopy-destination: out.img\n"
                      "# nbdcopy-destination-file: /w/new\\nline\n# nbdcopy-size: "),
            std::string::npos)
      << text;
  ExpectRoundTrip(identity, RangeSet());
  identity.destination_file = "";
  ExpectRoundTrip(identity, RangeSet());
  // A file as nbdcopy wrote it before these lines: read with no files.
  Result<CheckpointState> older = ParseCheckpoint(Heading() + "0 + 1\n0 0x1000 +\n", "ck.map");
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_EQ(older->identity, SomeIdentity(4096));
  const std::string doubled = Heading() + "# nbdcopy-source-file: /a\n# nbdcopy-source-file: /b\n";
  EXPECT_EQ(ParseError(doubled + "0 + 1\n0 0x1000 +\n"),
            "ck.map: line 8: a second nbdcopy-source-file line (the first is line 7)");
}

TEST(CheckpointFileTest, EmptyIdentityFieldsNeverMatch) {
  const CheckpointIdentity full = SomeIdentity();
  CheckpointIdentity empty = full;
  empty.fingerprint = "";
  EXPECT_EQ(Refusal(empty, empty),
            "cannot check the source's content fingerprint (the "
            "checkpoint records (none), this run has (none))");
  EXPECT_EQ(Refusal(full, empty),
            "cannot check the source's content fingerprint (the checkpoint "
            "records 'sha256:ab12cd34', this run has (none))");
  empty = full;
  empty.source = "";
  EXPECT_EQ(Refusal(empty, empty),
            "cannot check the source (the checkpoint records (none), this run has (none))");
  empty = full;
  empty.destination = "";
  EXPECT_EQ(Refusal(empty, full),
            "cannot check the destination (the checkpoint records (none), this run has 'out.img')");
  empty = full;
  empty.settings = "";
  EXPECT_EQ(Refusal(full, empty), "cannot check the settings (the checkpoint records '" +
                                      full.settings + "', this run has (none))");
}

class CheckpointFileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/checkpoint_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/ck.map";
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  static std::string Contents(const std::string& path) {
    std::stringstream text;
    text << std::ifstream(path, std::ios::binary).rdbuf();
    return text.str();
  }
  // ReadCheckpointFile's error, or "(ok)".
  static std::string ReadError(const std::string& path) {
    Result<std::optional<std::string>> read = ReadCheckpointFile(path);
    return read.ok() ? "(ok)" : read.status().message();
  }
  std::string directory_, path_;
};

TEST_F(CheckpointFileIoTest, WriteCreatesAndReplacesLeavingNoTemporary) {
  for (const std::string text : {"first\n", "second, longer\n", "3\n"}) {
    ASSERT_TRUE(WriteCheckpointFile(path_, text).ok());
    EXPECT_EQ(Contents(path_), text);
  }
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(directory_),
                          std::filesystem::directory_iterator()),
            1);
  struct stat info;
  ASSERT_EQ(stat(path_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & S_IWOTH, 0u);  // never writable by others
}

TEST_F(CheckpointFileIoTest, WriteReplacesAStaleTemporaryAndWorksWithoutADirectory) {
  std::ofstream(path_ + ".tmp") << "a much longer leftover of a run that was killed\n";
  ASSERT_TRUE(WriteCheckpointFile(path_, "new\n").ok());
  EXPECT_EQ(Contents(path_), "new\n");
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  const std::string here = std::filesystem::current_path();
  ASSERT_EQ(chdir(directory_.c_str()), 0);
  Status written = WriteCheckpointFile("plain.map", "x\n");
  ASSERT_EQ(chdir(here.c_str()), 0);
  ASSERT_TRUE(written.ok()) << written.message();
  EXPECT_EQ(Contents(directory_ + "/plain.map"), "x\n");
}

TEST_F(CheckpointFileIoTest, WriteFailuresNameWhatFailed) {
  const std::string missing = directory_ + "/no/such/ck.map";
  EXPECT_EQ(
      WriteCheckpointFile(missing, "x").message(),
      "--checkpoint=" + missing + ": cannot create " + missing + ".tmp: No such file or directory");
  std::filesystem::create_directory(path_);  // rename cannot replace a directory
  const Status status = WriteCheckpointFile(path_, "x");
  EXPECT_EQ(status.message().substr(0, status.message().rfind(':')),
            "--checkpoint=" + path_ + ": cannot rename " + path_ + ".tmp to " + path_);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(CheckpointFileIoTest, ReadGivesTheTextOrNulloptOrAnError) {
  Result<std::optional<std::string>> read = ReadCheckpointFile(path_);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_FALSE(read->has_value());
  const std::string text = RenderCheckpoint(SomeIdentity(), RangeSet()) + std::string(200000, '#');
  ASSERT_TRUE(WriteCheckpointFile(path_, text).ok());
  read = ReadCheckpointFile(path_);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, text);
  EXPECT_EQ(ReadError(directory_),
            "--checkpoint=" + directory_ + ": cannot read it: Is a directory");
  const std::string fifo = directory_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadError(fifo), "--checkpoint=" + fifo + ": not a regular file");  // no blocking
  EXPECT_EQ(ReadError(path_ + "/below"),
            "--checkpoint=" + path_ + "/below: cannot open it: Not a directory");
}

TEST(CheckpointFileTest, BadAreasAreDashBlocksAndReadBack) {
  RangeSet done, bad;
  done.Add(0, 0x5000);
  bad.Add(0x1000, 0x200);  // bad wins over done
  bad.Add(0x4000, 0x1000);
  const std::string text = RenderCheckpoint(SomeIdentity(0x6000), done, bad);
  EXPECT_NE(text.find("0x00000000  0x00001000  +\n"
                      "0x00001000  0x00000200  -\n"
                      "0x00001200  0x00002E00  +\n"
                      "0x00004000  0x00001000  -\n"
                      "0x00005000  0x00001000  ?\n"),
            std::string::npos)
      << text;
  Result<CheckpointState> parsed = ParseCheckpoint(text, "ck.map");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->bad, bad);
  RangeSet finished = done;
  finished.Remove(bad);
  EXPECT_EQ(parsed->done, finished);
}

TEST(CheckpointFileTest, DdrescuesFailedBlocksAreBadToo) {
  Result<CheckpointState> parsed = ParseCheckpoint(
      Heading(0x3000) + "0 +\n0 0x1000 *\n0x1000 0x1000 /\n0x2000 0x1000 -\n", "ck.map");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->bad.bytes(), 0x3000u);
  EXPECT_TRUE(parsed->done.empty());
}

TEST(CheckpointFileTest, EachSampleFingerprintsMatchWhereBothRunsRead) {
  EXPECT_TRUE(FingerprintsMatch("blkhash-sha256/64K@16:ab", "blkhash-sha256/64K@16:ab"));
  EXPECT_FALSE(FingerprintsMatch("blkhash-sha256/64K@16:ab", "blkhash-sha256/64K@16:ac"));
  EXPECT_TRUE(
      FingerprintsMatch("blkhash-sha256/64K@3/each:aa,-,cc", "blkhash-sha256/64K@3/each:aa,bb,cc"));
  EXPECT_TRUE(
      FingerprintsMatch("blkhash-sha256/64K@3/each:aa,bb,-", "blkhash-sha256/64K@3/each:-,bb,cc"));
  EXPECT_FALSE(
      FingerprintsMatch("blkhash-sha256/64K@3/each:aa,-,cc", "blkhash-sha256/64K@3/each:aa,bb,cd"));
  EXPECT_FALSE(
      FingerprintsMatch("blkhash-sha256/64K@3/each:aa,bb", "blkhash-sha256/64K@3/each:aa,bb,cc"));
  EXPECT_FALSE(FingerprintsMatch("blkhash-sha256/64K@3/each:aa,bb,cc",
                                 "blkhash-sha256/64K@4/each:aa,bb,cc"));
  EXPECT_FALSE(FingerprintsMatch("blkhash-sha256/64K@3/each:aa,bb,cc", "blkhash-sha256/64K@3:aa"));
}

}  // namespace
}  // namespace nbdcopy
