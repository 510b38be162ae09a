#include "engine/sync_copy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>

#include "job/progress.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;
using fakes::Operation;

constexpr uint64_t kKiB = 1024;

std::vector<std::byte> RandomBytes(size_t size, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  // Never zero, so zero detection cannot kick in by chance.
  for (auto& b : bytes) b = std::byte(1 + rng() % 255);
  return bytes;
}

CopyPlan Plan(uint64_t request_size = 64 * kKiB, uint64_t sparse_size = 4 * kKiB) {
  CopyPlan plan;
  plan.request_size = request_size;
  plan.sparse_size = sparse_size;
  plan.queue_size = request_size;
  return plan;
}

std::vector<Operation> OpsNamed(const MemoryEndpoint& endpoint, const std::string& op) {
  std::vector<Operation> result;
  for (const Operation& o : endpoint.log()) {
    if (o.op == op) result.push_back(o);
  }
  return result;
}

Status Copy(CopyPlan plan, MemoryEndpoint& source, MemoryEndpoint& destination) {
  FinishPlan(source.info().size.value_or(0), &plan);
  Progress progress(ProgressMode::kNone, -1, source.info().size);
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  return SyncCopy(plan, source, destination, books);
}

TEST(SyncCopyTest, ClonesDataWhereTheDestinationCan) {
  MemoryEndpoint source(RandomBytes(300 * kKiB + 5));
  auto destination = MemoryEndpoint::Zeroes(300 * kKiB + 5);
  destination.AllowClones();
  CopyPlan plan = Plan();
  plan.clone_data = true;
  FinishPlan(*source.info().size, &plan);
  Progress progress(ProgressMode::kNone, -1, source.info().size);
  CopyStats stats;
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  ASSERT_TRUE(SyncCopy(plan, source, destination, books, nullptr, &stats).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_TRUE(OpsNamed(source, "read").empty());
  EXPECT_TRUE(OpsNamed(destination, "write").empty());
  EXPECT_EQ(stats.bytes_cloned, 300 * kKiB + 5);
}

TEST(SyncCopyTest, ARefusedCloneEndsTheAttempts) {
  MemoryEndpoint source(RandomBytes(300 * kKiB + 5));
  auto destination = MemoryEndpoint::Zeroes(300 * kKiB + 5);
  CopyPlan plan = Plan();
  plan.clone_data = true;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(OpsNamed(destination, "clone").size(), 1u);
  EXPECT_FALSE(OpsNamed(source, "read").empty());
}

TEST(SyncCopyTest, CopiesAllDataInRequestSizedPieces) {
  MemoryEndpoint source(RandomBytes(256 * kKiB));
  auto destination = MemoryEndpoint::Zeroes(256 * kKiB);
  ASSERT_TRUE(Copy(Plan(64 * kKiB), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(OpsNamed(destination, "write"), (std::vector<Operation>{{"write", 0, 65536},
                                                                    {"write", 65536, 65536},
                                                                    {"write", 131072, 65536},
                                                                    {"write", 196608, 65536}}));
  EXPECT_TRUE(OpsNamed(destination, "zero").empty());
}

TEST(SyncCopyTest, SizeNotAMultipleOfRequestSize) {
  const size_t size = 3 * 4096 + 123;
  MemoryEndpoint source(RandomBytes(size));
  auto destination = MemoryEndpoint::Zeroes(size);
  ASSERT_TRUE(Copy(Plan(4096), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(OpsNamed(destination, "write").back(), (Operation{"write", 3 * 4096, 123}));
}

// A destination that counts writes whose bytes do not start on a page.
class AlignmentCountingEndpoint : public MemoryEndpoint {
 public:
  using MemoryEndpoint::MemoryEndpoint;
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    ++writes;
    if (reinterpret_cast<uintptr_t>(data.data()) % 4096 != 0) ++unaligned_writes;
    return MemoryEndpoint::Write(offset, data);
  }
  int writes = 0;
  int unaligned_writes = 0;
};

// A block device's direct writes take page-aligned bytes as they are, and
// send any other through a bounce buffer (a copy each): the one buffer of
// this engine starts on a page, and so does every run zero detection cuts
// from it (at multiples of the sparse size).
TEST(SyncCopyTest, WritesComeFromPageAlignedBytesFromSizedSourcesAndStreams) {
  std::vector<std::byte> bytes = RandomBytes(512 * kKiB);
  std::fill(bytes.begin() + 72 * kKiB, bytes.begin() + 80 * kKiB, std::byte{0});
  for (bool stream : {false, true}) {
    MemoryEndpoint source(bytes);
    if (stream) source.MakeStream();
    AlignmentCountingEndpoint destination(std::vector<std::byte>(bytes.size()));
    ASSERT_TRUE(Copy(Plan(64 * kKiB), source, destination).ok());
    EXPECT_EQ(destination.data(), bytes);
    EXPECT_GT(destination.writes, 8) << "stream=" << stream;
    EXPECT_EQ(destination.unaligned_writes, 0) << "stream=" << stream;
  }
}

TEST(SyncCopyTest, EmptySourceDoesNothing) {
  MemoryEndpoint source({});
  auto destination = MemoryEndpoint::Zeroes(4096);
  ASSERT_TRUE(Copy(Plan(), source, destination).ok());
  EXPECT_TRUE(destination.log().empty());
}

TEST(SyncCopyTest, SmallerIntoLargerLeavesTheTailAlone) {
  MemoryEndpoint source(RandomBytes(8 * kKiB, 2));
  MemoryEndpoint destination(RandomBytes(16 * kKiB, 3));
  auto tail_before =
      std::vector<std::byte>(destination.data().begin() + 8 * kKiB, destination.data().end());
  ASSERT_TRUE(Copy(Plan(4096), source, destination).ok());
  EXPECT_TRUE(std::equal(source.data().begin(), source.data().end(), destination.data().begin()));
  EXPECT_TRUE(
      std::equal(tail_before.begin(), tail_before.end(), destination.data().begin() + 8 * kKiB));
}

TEST(SyncCopyTest, ZeroExtentsBecomeZeroOperationsAndAreNeverRead) {
  auto bytes = RandomBytes(1024 * kKiB);
  std::fill(bytes.begin() + 128 * kKiB, bytes.begin() + 640 * kKiB, std::byte{0});
  MemoryEndpoint source(bytes);
  source.AddZeroExtent(128 * kKiB, 512 * kKiB);
  MemoryEndpoint destination(RandomBytes(1024 * kKiB, 9));
  CopyPlan plan = Plan(64 * kKiB);
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(OpsNamed(destination, "zero"),
            (std::vector<Operation>{{"zero", 128 * kKiB, 512 * kKiB}}));
  for (const Operation& read : OpsNamed(source, "read")) {
    EXPECT_TRUE(read.offset + read.length <= 128 * kKiB || read.offset >= 640 * kKiB) << read;
  }
  uint64_t written = 0;
  for (const Operation& w : OpsNamed(destination, "write")) written += w.length;
  EXPECT_EQ(written, 512 * kKiB);
}

TEST(SyncCopyTest, NoExtentsReadsEverything) {
  auto bytes = RandomBytes(256 * kKiB);
  std::fill(bytes.begin(), bytes.begin() + 128 * kKiB, std::byte{0});
  MemoryEndpoint source(bytes);
  source.AddZeroExtent(0, 128 * kKiB);
  auto destination = MemoryEndpoint::Zeroes(256 * kKiB);
  CopyPlan plan = Plan(64 * kKiB);
  plan.use_extents = false;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_TRUE(OpsNamed(source, "extents").empty());
  EXPECT_EQ(OpsNamed(source, "read").size(), 4u);
  // Zero detection still turns the zero half into zero operations.
  EXPECT_EQ(OpsNamed(destination, "zero"),
            (std::vector<Operation>{{"zero", 0, 64 * kKiB}, {"zero", 64 * kKiB, 64 * kKiB}}));
}

TEST(SyncCopyTest, SkipsZeroRangesWhenDestinationIsZero) {
  auto bytes = RandomBytes(256 * kKiB);
  std::fill(bytes.begin(), bytes.begin() + 128 * kKiB, std::byte{0});
  MemoryEndpoint source(bytes);
  source.AddZeroExtent(0, 128 * kKiB);
  auto destination = MemoryEndpoint::Zeroes(256 * kKiB);
  CopyPlan plan = Plan(64 * kKiB);
  plan.skip_zero_ranges = true;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_TRUE(OpsNamed(destination, "zero").empty());
  EXPECT_EQ(OpsNamed(destination, "write").size(), 2u);
}

TEST(SyncCopyTest, AllocatedAsksForAllocatedZeroes) {
  MemoryEndpoint source(std::vector<std::byte>(64 * kKiB));
  source.AddZeroExtent(0, 64 * kKiB);
  MemoryEndpoint destination(RandomBytes(64 * kKiB));
  CopyPlan plan = Plan();
  plan.allocated = true;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(destination.log(), (std::vector<Operation>{{"zero-alloc", 0, 64 * kKiB}}));
}

TEST(SyncCopyTest, AllocatedWritesTheZeroBlocksOfDataAsRead) {
  // data 4K | zero 8K | data 4K, all one data extent: one write, as libnbd's
  // nbdcopy --allocated makes it, not write, zero, write.
  auto bytes = RandomBytes(16 * kKiB);
  std::fill(bytes.begin() + 4 * kKiB, bytes.begin() + 12 * kKiB, std::byte{0});
  MemoryEndpoint source(bytes);
  MemoryEndpoint destination(RandomBytes(16 * kKiB, 5));
  CopyPlan plan = Plan(64 * kKiB, 4 * kKiB);
  plan.allocated = true;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(destination.log(), (std::vector<Operation>{{"write", 0, 16 * kKiB}}));
  // A read of nothing but zeroes (a preallocated image's) is one allocated
  // zero, not its bytes.
  MemoryEndpoint zeroes(std::vector<std::byte>(16 * kKiB));
  MemoryEndpoint target(RandomBytes(16 * kKiB, 6));
  ASSERT_TRUE(Copy(plan, zeroes, target).ok());
  EXPECT_EQ(target.data(), zeroes.data());
  EXPECT_EQ(target.log(), (std::vector<Operation>{{"zero-alloc", 0, 16 * kKiB}}));
}

TEST(SyncCopyTest, ZeroDetectionSplitsAtSparseGranularity) {
  // data 4K | zero 8K | data 2K + zero 2K (a partly zero block stays data) | zero 4K
  auto bytes = RandomBytes(20 * kKiB);
  std::fill(bytes.begin() + 4 * kKiB, bytes.begin() + 12 * kKiB, std::byte{0});
  std::fill(bytes.begin() + 14 * kKiB, bytes.end(), std::byte{0});
  MemoryEndpoint source(bytes);
  MemoryEndpoint destination(RandomBytes(20 * kKiB, 5));
  ASSERT_TRUE(Copy(Plan(64 * kKiB, 4 * kKiB), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(destination.log(), (std::vector<Operation>{{"write", 0, 4 * kKiB},
                                                       {"zero", 4 * kKiB, 8 * kKiB},
                                                       {"write", 12 * kKiB, 4 * kKiB},
                                                       {"zero", 16 * kKiB, 4 * kKiB}}));
}

TEST(SyncCopyTest, SparseZeroDisablesZeroDetection) {
  MemoryEndpoint source(std::vector<std::byte>(64 * kKiB));
  MemoryEndpoint destination(RandomBytes(64 * kKiB));
  ASSERT_TRUE(Copy(Plan(64 * kKiB, 0), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_EQ(destination.log(), (std::vector<Operation>{{"write", 0, 64 * kKiB}}));
}

TEST(SyncCopyTest, NoZeroDetectionWhenDestinationZeroesSlowly) {
  MemoryEndpoint source(std::vector<std::byte>(64 * kKiB));
  auto destination = MemoryEndpoint::Zeroes(64 * kKiB);
  destination.mutable_info().efficient_zero = false;
  ASSERT_TRUE(Copy(Plan(), source, destination).ok());
  EXPECT_EQ(destination.log(), (std::vector<Operation>{{"write", 0, 64 * kKiB}}));
}

TEST(SyncCopyTest, FailedExtentsQueryFallsBackToData) {
  MemoryEndpoint source(RandomBytes(128 * kKiB));
  source.AddZeroExtent(0, 64 * kKiB);  // a lie the copy must never act on
  source.FailOn("extents");
  auto destination = MemoryEndpoint::Zeroes(128 * kKiB);
  ASSERT_TRUE(Copy(Plan(), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
}

TEST(SyncCopyTest, FlushesOnlyWhenAsked) {
  MemoryEndpoint source(RandomBytes(4096));
  auto destination = MemoryEndpoint::Zeroes(4096);
  ASSERT_TRUE(Copy(Plan(), source, destination).ok());
  EXPECT_TRUE(OpsNamed(destination, "flush").empty());
  CopyPlan plan = Plan();
  plan.flush = true;
  ASSERT_TRUE(Copy(plan, source, destination).ok());
  EXPECT_EQ(destination.log().back(), (Operation{"flush", 0, 0}));
}

class SyncCopyErrorTest : public ::testing::TestWithParam<std::pair<bool, std::string>> {};

TEST_P(SyncCopyErrorTest, FirstFailureStopsTheCopy) {
  auto [fail_source, op] = GetParam();
  auto bytes = RandomBytes(256 * kKiB);
  std::fill(bytes.begin() + 64 * kKiB, bytes.begin() + 128 * kKiB, std::byte{0});
  MemoryEndpoint source(bytes, "src");
  auto destination = MemoryEndpoint::Zeroes(256 * kKiB);
  (fail_source ? source : destination).FailOn(op);
  CopyPlan plan = Plan();
  plan.flush = true;
  Status status = Copy(plan, source, destination);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(op), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("Input/output error"), std::string::npos);
  EXPECT_NE(status.message().find("offset"), std::string::npos);
  // Nothing after the failure.
  const MemoryEndpoint& failed = fail_source ? source : destination;
  EXPECT_EQ(failed.log().back().op.substr(0, op.size()), op);
}

INSTANTIATE_TEST_SUITE_P(Operations, SyncCopyErrorTest,
                         ::testing::Values(std::pair{true, std::string("read")},
                                           std::pair{false, std::string("write")},
                                           std::pair{false, std::string("zero")},
                                           std::pair{false, std::string("flush")}));

TEST(SyncCopyTest, StreamSourceIsReadToTheEnd) {
  MemoryEndpoint source(RandomBytes(100 * kKiB + 7));
  source.MakeStream();
  auto destination = MemoryEndpoint::Zeroes(100 * kKiB + 7);
  ASSERT_TRUE(Copy(Plan(64 * kKiB), source, destination).ok());
  EXPECT_EQ(destination.data(), source.data());
  EXPECT_TRUE(OpsNamed(source, "extents").empty());
}

TEST(SyncCopyTest, ProgressEndsAt100) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  MemoryEndpoint source(RandomBytes(1024 * kKiB));
  auto destination = MemoryEndpoint::Zeroes(1024 * kKiB);
  Progress progress(ProgressMode::kFd, fds[1], source.info().size);
  progress.Start();
  CopyPlan plan = Plan(64 * kKiB);
  FinishPlan(*source.info().size, &plan);
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  ASSERT_TRUE(SyncCopy(plan, source, destination, books).ok());
  progress.Finish();
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(fds[0]);
  EXPECT_TRUE(text.starts_with("0/100\n")) << text;
  EXPECT_TRUE(text.ends_with("\n93/100\n99/100\n100/100\n")) << text;
}

}  // namespace
}  // namespace nbdcopy
