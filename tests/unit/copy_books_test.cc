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
constexpr auto kNever = std::chrono::hours(1);

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
// restarted after the others wrote: what is done and not yet durable is
// copied again, and what started before it is not trusted.
TEST(CopyBooksTest, AConnectionOpenedMidCopyStartsANewEpoch) {
  CountingProgress progress;
  const CopyPlan plan = FourMiBPlan();
  Checkpointer checkpointer(RangeSet(), nullptr, kNever, 1ULL << 40);
  CopyBooks books(plan, progress, nullptr, nullptr, &checkpointer);
  auto destination = MemoryEndpoint::Zeroes(4 * kMiB);
  Bookkeeper first(books, destination);
  const uint64_t before = first.Started();
  first.Done(PieceKind::kData, 0, kMiB, before, kMiB);
  first.Done(PieceKind::kData, kMiB, kMiB, before, kMiB);  // gathered, not yet told
  WorkMap map(RulesFor(plan, 4 * kMiB));
  {
    Bookkeeper told(books, destination);
    told.Done(PieceKind::kData, 3 * kMiB, kMiB, before, kMiB);
  }  // tells what it gathered
  Bookkeeper late(books, destination);
  EXPECT_TRUE(late.OpenedMidCopy(map));
  EXPECT_NE(late.Started(), before);
  EXPECT_TRUE(map.has_copy_again());
  // What the first loop gathered before the new epoch is not trusted either.
  bool again = false;
  ASSERT_TRUE(first.AtEnd(destination, map, false, &again).ok());
  EXPECT_TRUE(again);
  RangeSet copied_again;
  std::deque<Piece> pieces;
  while (map.TakeBatch(destination, false, 64 * kMiB, &pieces)) {
    for (const Piece& piece : pieces) {
      if (piece.kind == PieceKind::kCopyAgain) copied_again.Add(piece.offset, piece.length);
    }
    pieces.clear();
  }
  RangeSet expected;
  expected.Add(0, 2 * kMiB);
  expected.Add(3 * kMiB, kMiB);
  EXPECT_EQ(copied_again, expected);
  // Nothing was made durable by a flush on the late connection.
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_TRUE(checkpointer.durable().empty());
}

TEST(CopyBooksTest, WithoutACheckpointerAConnectionOpenedMidCopyCostsNothing) {
  CountingProgress progress;
  const CopyPlan plan = FourMiBPlan();
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  auto destination = MemoryEndpoint::Zeroes(4 * kMiB);
  WorkMap map(RulesFor(plan, 4 * kMiB));
  Bookkeeper late(books, destination);
  EXPECT_FALSE(late.OpenedMidCopy(map));
  EXPECT_FALSE(map.has_copy_again());
}

}  // namespace
}  // namespace nbdcopy
