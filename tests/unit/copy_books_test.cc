// The seam both engines keep their books through (engine/copy_books.h):
// progress, the checkpointer's done ranges, and what must be copied again.
#include "engine/copy_books.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>

#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "hash/ordered_checksum.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;

constexpr uint64_t kMiB = 1024 * 1024;

struct CountingProgress : ProgressSink {
  void Add(uint64_t bytes) override { added += bytes; }
  std::atomic<uint64_t> added{0};
};

CopyPlan FourMiBPlan() {
  CopyPlan plan;
  plan.request_size = kMiB;
  plan.alignment = 4096;
  FinishPlan(4 * kMiB, &plan);
  return plan;
}

TEST(CopyBooksTest, ProgressCountsEachRangeOnceAndNothingAfterAFailure) {
  CountingProgress progress;
  const CopyPlan plan = FourMiBPlan();
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  auto destination = MemoryEndpoint::Zeroes(4 * kMiB);
  Bookkeeper keeper(books, destination);
  keeper.Done(PieceKind::kData, 0, kMiB, keeper.Started(), kMiB);
  keeper.Done(PieceKind::kZero, kMiB, kMiB, keeper.Started(), 0);
  keeper.Done(PieceKind::kCopyAgain, 0, kMiB, keeper.Started(), kMiB);  // counted before
  EXPECT_EQ(progress.added, 2 * kMiB);
  books.StopCounting();
  keeper.Done(PieceKind::kData, 2 * kMiB, kMiB, keeper.Started(), kMiB);
  EXPECT_EQ(progress.added, 2 * kMiB);
}

// A worker whose connection opens mid-copy may reach a server that
// restarted after the others wrote, without having seen a loss itself: it
// never makes a checkpoint (its flush cannot vouch for their writes); it
// tells what it did, for the first loop's checkpoints.
TEST(CopyBooksTest, AConnectionOpenedMidCopyMakesNoCheckpoint) {
  CountingProgress progress;
  const CopyPlan plan = FourMiBPlan();
  // Due at once (interval 0).
  Checkpointer checkpointer(RangeSet(), nullptr, std::chrono::seconds(0), 1ULL << 40);
  CopyBooks books(plan, progress, nullptr, nullptr, &checkpointer);
  auto destination = MemoryEndpoint::Zeroes(4 * kMiB);
  WorkMap map(plan.rules);
  bool again = false;
  Bookkeeper late(books, destination, /*opened_mid_copy=*/true);
  late.Done(PieceKind::kData, 0, kMiB, late.Started(), kMiB);
  ASSERT_TRUE(late.Between(destination, map, false, &again).ok());
  EXPECT_EQ(checkpointer.checkpoints(), 0u);
  EXPECT_TRUE(destination.OpsNamed("flush").empty());
  Bookkeeper first(books, destination);
  ASSERT_TRUE(first.Between(destination, map, false, &again).ok());
  EXPECT_EQ(checkpointer.checkpoints(), 1u);
  RangeSet expected;
  expected.Add(0, kMiB);
  EXPECT_EQ(checkpointer.durable(), expected);
  EXPECT_FALSE(again);
}

}  // namespace
}  // namespace nbdcopy

namespace nbdcopy {
namespace {

// --checksum through the books: the digest of the source's bytes in image
// order, whatever order the reads finish in, holes hashed unread.
std::string Sha256(const std::vector<std::byte>& image) {
  auto checksum = OrderedChecksum::Create("sha256");
  EXPECT_TRUE(checksum.ok());
  (*checksum)->AddData(0, image, nullptr, 0);
  return *(*checksum)->Finish(image.size());
}

std::vector<std::byte> DataWithHoles(size_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 131 + i / 4096) | 1);
  std::fill(bytes.begin() + size / 4, bytes.begin() + size / 2, std::byte{0});  // a hole
  std::fill(bytes.end() - 5000, bytes.end(), std::byte{0});                    // ends in zeroes
  return bytes;
}

Result<std::string> CopyWithChecksum(MemoryEndpoint& source, MemoryEndpoint& destination,
                                     CopyPlan plan) {
  FinishPlan(source.info().size.value_or(0), &plan);
  auto checksum = OrderedChecksum::Create("sha256");
  if (!checksum.ok()) return checksum.status();
  CountingProgress progress;
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr, checksum->get());
  uint64_t length = 0;
  Status status = plan.synchronous ? SyncCopy(plan, source, destination, books, &length)
                                   : ParallelCopy(plan, source, destination, books);
  if (!status.ok()) return status;
  if (!plan.synchronous) length = *source.info().size;
  return (*checksum)->Finish(length);
}

TEST(CopyBooksChecksumTest, ParallelReadsFinishingOutOfOrderHashInImageOrder) {
  const size_t size = 5 * kMiB + 333;  // not a multiple of 512
  const std::vector<std::byte> bytes = DataWithHoles(size);
  for (unsigned workers : {1u, 3u}) {
    for (unsigned seed : {1u, 2u}) {
      MemoryEndpoint source(bytes, "src");
      source.AddZeroExtent(size / 4, size / 4);
      source.DeferCompletions(seed);
      MemoryEndpoint destination(std::vector<std::byte>(size, std::byte{0xee}), "dst");
      destination.DeferCompletions(seed + 10);
      CopyPlan plan;
      plan.synchronous = false;
      plan.connections = workers;
      plan.requests = 16;
      plan.request_size = 64 * 1024;
      plan.queue_size = 512 * 1024;
      plan.sparse_size = 4096;
      Result<std::string> digest = CopyWithChecksum(source, destination, plan);
      ASSERT_TRUE(digest.ok()) << digest.status().message();
      EXPECT_EQ(*digest, Sha256(bytes)) << workers << " workers, seed " << seed;
      EXPECT_EQ(destination.data(), bytes);
      // The hole was never read, yet hashed.
      for (const auto& read : source.OpsNamed("read")) {
        EXPECT_TRUE(read.offset + read.length <= size / 4 || read.offset >= size / 2)
            << "read " << read.offset << "+" << read.length;
      }
    }
  }
}

TEST(CopyBooksChecksumTest, SynchronousAndStreamCopiesHashInOrder) {
  const size_t size = 3 * kMiB + 77;
  const std::vector<std::byte> bytes = DataWithHoles(size);
  CopyPlan plan;
  plan.request_size = 256 * 1024;
  plan.sparse_size = 4096;
  MemoryEndpoint sized(bytes, "src");
  sized.AddZeroExtent(size / 4, size / 4);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(size);
  Result<std::string> digest = CopyWithChecksum(sized, destination, plan);
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(*digest, Sha256(bytes));

  MemoryEndpoint stream(bytes, "pipe");
  stream.MakeStream();
  MemoryEndpoint out = MemoryEndpoint::Zeroes(size);
  digest = CopyWithChecksum(stream, out, plan);
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(*digest, Sha256(bytes));
}

TEST(CopyBooksChecksumTest, AFailedCopyGivesItsBuffersBackAndEnds) {
  const size_t size = 4 * kMiB;
  const std::vector<std::byte> bytes = DataWithHoles(size);
  MemoryEndpoint source(bytes, "src");
  source.DeferCompletions(3);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(size);
  destination.FailOn("write");
  CopyPlan plan;
  plan.synchronous = false;
  plan.connections = 2;
  plan.requests = 8;
  plan.request_size = 64 * 1024;
  plan.queue_size = 256 * 1024;
  Result<std::string> digest = CopyWithChecksum(source, destination, plan);
  ASSERT_FALSE(digest.ok());
  EXPECT_NE(digest.status().message().find("Input/output error"), std::string::npos)
      << digest.status().message();
}

}  // namespace
}  // namespace nbdcopy
