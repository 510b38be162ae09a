// The seam both engines keep their books through (engine/copy_books.h):
// progress, the checkpointer's done ranges, and what must be copied again.
#include "engine/copy_books.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>

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
  WorkMap map(RulesFor(plan, 4 * kMiB));
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
