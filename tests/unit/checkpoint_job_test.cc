// CheckpointJob against a MemoryFileSystem and MemoryEndpoints: a run's
// whole life (load, identity check, persist, finish) with nothing on disk.
#include "job/checkpoint_job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "support/memory_endpoint.h"
#include "support/memory_file_system.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;
using fakes::MemoryFileSystem;
using Step = FileError::Step;
using Strings = std::vector<std::string>;

constexpr uint64_t kSize = 1 << 20;
const std::string kMap = "ck.map";

std::vector<std::byte> Pattern(size_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = std::byte(i * 7 + i / 4096);
  return bytes;
}

EndpointSpec Nbd(const std::string& uri) {
  return EndpointSpec{EndpointKind::kNbdUri, uri, {}, {}};
}
EndpointSpec Local(const std::string& path) {
  return EndpointSpec{EndpointKind::kLocalPath, path, {}, {}};
}

struct CheckpointJobTest : ::testing::Test {
  Options options;
  MemoryFileSystem files;
  MemoryEndpoint source{Pattern(kSize), "src"};
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(kSize);

  CheckpointJobTest() { options.checkpoint = kMap; }

  Result<std::unique_ptr<CheckpointJob>> Load(const std::string& destination_uri = "nbd://dst") {
    return CheckpointJob::Load(options, Nbd("nbd://src"), Nbd(destination_uri), files);
  }
  Status Check(CheckpointJob& run, const std::string& destination_name = "nbd://dst") {
    return run.Check(options, source, destination, "nbd://src", destination_name);
  }
  // Check, then the books started for a plan of whole 4 KiB blocks.
  std::unique_ptr<CheckpointJob> Started() {
    auto run = Load();
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (!run.ok()) return nullptr;
    Status checked = Check(**run);
    EXPECT_TRUE(checked.ok()) << checked.message();
    (*run)->StartBooks(4096);
    return std::move(run).value();
  }
  // The copy of [0, length): written, done, made durable.
  Status Copied(CheckpointJob& run, uint64_t length) {
    std::copy_n(source.data().begin(), length, destination.mutable_data().begin());
    run.checkpointer()->Completed(0, length, run.checkpointer()->epoch());
    return run.checkpointer()->Checkpoint(destination);
  }
  // Load and Check with a local source file spelled `source_path`.
  Result<std::unique_ptr<CheckpointJob>> FromFile(const std::string& source_path) {
    auto run = CheckpointJob::Load(options, Local(source_path), Nbd("nbd://dst"), files);
    if (!run.ok()) return run.status();
    if (Status checked = (*run)->Check(options, source, destination, source_path, "nbd://dst");
        !checked.ok()) {
      return checked;
    }
    (*run)->StartBooks(4096);
    return std::move(run).value();
  }
  RangeSet DoneInFile() {
    Result<CheckpointState> state = ParseCheckpoint(files.files.at(kMap), kMap);
    EXPECT_TRUE(state.ok()) << state.status().message();
    return state.ok() ? state->done : RangeSet();
  }
};

RangeSet Set(uint64_t offset, uint64_t length) {
  RangeSet set;
  set.Add(offset, length);
  return set;
}

TEST_F(CheckpointJobTest, AFreshRunWritesFileOnlyOnceSomethingIsDurableAndFinishesWithEverything) {
  auto run = Started();
  ASSERT_NE(run, nullptr);
  EXPECT_FALSE(run->resuming());
  EXPECT_TRUE(run->recorded_done().empty());
  // FILE read (missing), its temporary probed, nothing written yet.
  EXPECT_EQ(files.log, (Strings{"read ck.map", "probe ck.map.tmp"}));
  EXPECT_TRUE(files.files.empty());

  ASSERT_TRUE(Copied(*run, kSize / 2).ok());
  EXPECT_EQ(files.log.back(), "replace ck.map");
  EXPECT_EQ(DoneInFile(), Set(0, kSize / 2));
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(DoneInFile(), Set(0, kSize));
  // Nothing new: no write (and no fsync).
  const size_t calls = files.log.size();
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(files.log.size(), calls);
  EXPECT_EQ(files.files.count(kMap + ".tmp"), 0u);
}

TEST_F(CheckpointJobTest, ASecondRunResumesWithWhatTheFirstMadeDurable) {
  auto first = Started();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(Copied(*first, kSize / 4).ok());
  first.reset();  // killed

  auto run = Started();
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->resuming());
  EXPECT_EQ(run->done_bytes(), kSize / 4);
  EXPECT_EQ(run->recorded_done(), Set(0, kSize / 4));
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(DoneInFile(), Set(0, kSize));
}

TEST_F(CheckpointJobTest, RefusesACheckpointOfAnotherCopyOrADestinationWithoutItsBytes) {
  auto first = Started();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(Copied(*first, kSize / 4).ok());
  const std::string text = files.files.at(kMap);

  auto other = Load("nbd://other");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Check(**other, "nbd://other").message(),
            "--checkpoint=ck.map: it was made for destination 'nbd://dst', not 'nbd://other'; "
            "remove ck.map to copy from the start");

  destination.mutable_data()[100] = std::byte{0xff};
  auto run = Load();
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(Check(**run).message(),
            "--checkpoint=ck.map: memory does not hold what the checkpoint says was copied (the "
            "bytes at offset 0 differ from the source's); remove ck.map to copy from the start");
  EXPECT_EQ(files.files.at(kMap), text);  // refusals never write FILE
}

TEST_F(CheckpointJobTest, AFileSourceResumesUnderAnySpellingOfTheSameFile) {
  files.canonical_paths = {{"a.raw", "/w/a.raw"},
                           {"./a.raw", "/w/a.raw"},
                           {"/w/a.raw", "/w/a.raw"},
                           {"b.raw", "/w/b.raw"}};
  auto first = FromFile("a.raw");
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(Copied(**first, kSize / 4).ok());
  EXPECT_NE(files.files.at(kMap).find("# nbdcopy-source: a.raw\n# nbdcopy-source-file: /w/a.raw\n"
                                      "# nbdcopy-destination: nbd://dst\n# nbdcopy-size: "),
            std::string::npos)
      << files.files.at(kMap);
  first->reset();
  const std::string text = files.files.at(kMap);
  for (const char* spelling : {"./a.raw", "/w/a.raw", "a.raw"}) {
    auto run = FromFile(spelling);
    ASSERT_TRUE(run.ok()) << spelling << ": " << run.status().message();
    EXPECT_TRUE((*run)->resuming());
    EXPECT_EQ((*run)->done_bytes(), kSize / 4);
  }
  EXPECT_EQ(FromFile("b.raw").status().message(),
            "--checkpoint=ck.map: it was made for source 'a.raw' ('/w/a.raw'), not 'b.raw' "
            "('/w/b.raw'); remove ck.map to copy from the start");
  EXPECT_EQ(files.files.at(kMap), text);  // checks never write FILE
}

TEST_F(CheckpointJobTest, AnOlderFileNamingTheSourceAsTypedResumesUnderAnySpellingFromHere) {
  files.canonical_paths = {{"a.raw", "/w/a.raw"}, {"./a.raw", "/w/a.raw"}, {"b.raw", "/w/b.raw"}};
  auto first = FromFile("a.raw");
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(Copied(**first, kSize / 4).ok());
  first->reset();
  // As nbdcopy wrote it before it recorded files: no nbdcopy-source-file line.
  Result<CheckpointState> state = ParseCheckpoint(files.files.at(kMap), kMap);
  ASSERT_TRUE(state.ok());
  state->identity.source_file.clear();
  files.files[kMap] = RenderCheckpoint(state->identity, state->done);
  ASSERT_EQ(files.files[kMap].find("-file:"), std::string::npos);

  for (const char* spelling : {"a.raw", "./a.raw"}) {
    auto run = FromFile(spelling);
    ASSERT_TRUE(run.ok()) << spelling << ": " << run.status().message();
    EXPECT_EQ((*run)->done_bytes(), kSize / 4);
  }
  // Same words, even when they cannot be resolved (as before).
  files.canonical_paths.clear();
  EXPECT_TRUE(FromFile("a.raw").ok());
  files.canonical_paths = {{"a.raw", "/w/a.raw"}, {"./a.raw", "/w/a.raw"}, {"b.raw", "/w/b.raw"}};
  EXPECT_EQ(FromFile("b.raw").status().message(),
            "--checkpoint=ck.map: it was made for source 'a.raw' ('/w/a.raw'), not 'b.raw' "
            "('/w/b.raw'); remove ck.map to copy from the start");
  // The next checkpoint records the file.
  auto run = FromFile("./a.raw");
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE((*run)->Finish().ok());
  EXPECT_NE(
      files.files.at(kMap).find("# nbdcopy-source: ./a.raw\n# nbdcopy-source-file: /w/a.raw\n"),
      std::string::npos);
}

TEST_F(CheckpointJobTest, LoadRefusesStreamsNullAndFilesItCannotUse) {
  EXPECT_EQ(
      CheckpointJob::Load(options, Nbd("nbd://src"), {EndpointKind::kNull, "null:", {}, {}}, files)
          .status()
          .message(),
      "--checkpoint=ck.map: null:: a resumable copy needs a destination written at "
      "offsets, not null:");
  EXPECT_EQ(
      CheckpointJob::Load(options, {EndpointKind::kStdio, "-", {}, {}}, Nbd("nbd://dst"), files)
          .status()
          .message(),
      "--checkpoint=ck.map: -: a stream source cannot be resumed");
  EXPECT_TRUE(files.log.empty());  // refused before FILE is read

  files.others.insert(kMap);
  EXPECT_EQ(Load().status().message(), "--checkpoint=ck.map: not a regular file");
  files.others.clear();
  files.files[kMap] = "garbage\n";
  EXPECT_EQ(Load().status().message(),
            "--checkpoint=ck.map: ck.map: not a checkpoint written by nbdcopy");
  files.files.clear();
  files.fault = MemoryFileSystem::Fault{Step::kRead, EIO};
  files.files[kMap] = "";
  EXPECT_EQ(Load().status().message(), "--checkpoint=ck.map: cannot read it: Input/output error");
  files.files.clear();
  files.fault = MemoryFileSystem::Fault{Step::kOpen, EACCES};
  EXPECT_EQ(Load().status().message(), "--checkpoint=ck.map: cannot open it: Permission denied");
}

TEST_F(CheckpointJobTest, LoadRefusesAFileItCouldNotWriteLater) {
  files.fault = MemoryFileSystem::Fault{Step::kOpen, EROFS, 0, kMap + ".tmp"};
  EXPECT_EQ(Load().status().message(),
            "--checkpoint=ck.map: cannot write ck.map.tmp: Read-only file system");
  EXPECT_EQ(files.log, (Strings{"read ck.map", "probe ck.map.tmp"}));
}

TEST_F(CheckpointJobTest, AFailedPersistIsTheCopysFailureAndLeavesTheOldFile) {
  auto run = Started();
  ASSERT_NE(run, nullptr);
  ASSERT_TRUE(Copied(*run, kSize / 4).ok());
  const std::string old_text = files.files.at(kMap);

  files.fault = MemoryFileSystem::Fault{Step::kWrite, ENOSPC, 10};  // a short write
  EXPECT_EQ(Copied(*run, kSize / 2).message(),
            "--checkpoint=ck.map: cannot write ck.map.tmp: No space left on device");
  EXPECT_EQ(files.files.at(kMap), old_text);
  EXPECT_EQ(files.files.count(kMap + ".tmp"), 0u);

  files.fault = MemoryFileSystem::Fault{Step::kRename, EXDEV};
  EXPECT_EQ(run->Finish().message(),
            "--checkpoint=ck.map: cannot rename ck.map.tmp to ck.map: Invalid cross-device link");
  EXPECT_EQ(files.files.at(kMap), old_text);
  files.fault = MemoryFileSystem::Fault{Step::kSync, EIO};
  EXPECT_EQ(run->Finish().message(),
            "--checkpoint=ck.map: cannot sync ck.map.tmp: Input/output error");
  files.fault = MemoryFileSystem::Fault{Step::kSyncDirectory, EIO};
  EXPECT_EQ(run->Finish().message(),
            "--checkpoint=ck.map: cannot sync the directory (directory of ck.map): Input/output "
            "error");
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(DoneInFile(), Set(0, kSize));
}

}  // namespace
}  // namespace nbdcopy
