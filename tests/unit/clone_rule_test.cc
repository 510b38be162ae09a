#include "engine/clone_rule.h"

#include <gtest/gtest.h>

#include <deque>

namespace nbdcopy {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// Pieces from {offset, length, zero}: kZero or kData.
std::deque<Piece> Pieces(std::initializer_list<Extent> extents) {
  std::deque<Piece> pieces;
  for (const Extent& e : extents) {
    pieces.push_back({e.offset, e.length, e.zero ? PieceKind::kZero : PieceKind::kData});
  }
  return pieces;
}

TEST(CloneRuleTest, JoinsContiguousDataPiecesUpToAZeroPiece) {
  CloneRule rule(true);
  auto pieces = Pieces(
      {{0, kMiB, false}, {kMiB, kMiB, false}, {2 * kMiB, kMiB, true}, {3 * kMiB, kMiB, false}});
  std::optional<CloneRule::Run> run = rule.Next(pieces);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->offset, 0u);
  EXPECT_EQ(run->length, 2 * kMiB);
  EXPECT_EQ(run->pieces, 2u);
}

TEST(CloneRuleTest, RunsStopAtAGapAndAtTheLargestRun) {
  CloneRule rule(true);
  EXPECT_EQ(rule.Next(Pieces({{0, kMiB, false}, {2 * kMiB, kMiB, false}}))->pieces, 1u);
  std::deque<Piece> many;
  for (uint64_t offset = 0; offset < 2 * CloneRule::kMaxRun; offset += 256 * kMiB) {
    many.push_back({offset, 256 * kMiB, PieceKind::kData});
  }
  EXPECT_EQ(rule.Next(many)->length, CloneRule::kMaxRun);
}

TEST(CloneRuleTest, NothingToTryWhenDisabledOrAtAZeroPiece) {
  EXPECT_FALSE(CloneRule(false).Next(Pieces({{0, kMiB, false}})));
  EXPECT_FALSE(CloneRule(true).Next(Pieces({{0, kMiB, true}})));
  EXPECT_FALSE(CloneRule(true).Next({}));
}

// A run is of one kind, so that the books count it as one: a range copied
// again is not counted a second time, and hash-only pieces are never
// written, let alone cloned.
TEST(CloneRuleTest, ARunIsOfOneKindAndOnlyOfPiecesThatWrite) {
  CloneRule rule(true);
  std::deque<Piece> mixed = {{0, kMiB, PieceKind::kCopyAgain},
                             {kMiB, kMiB, PieceKind::kCopyAgain},
                             {2 * kMiB, kMiB, PieceKind::kData}};
  ASSERT_TRUE(rule.Next(mixed));
  EXPECT_EQ(rule.Next(mixed)->pieces, 2u);
  EXPECT_FALSE(rule.Next({{0, kMiB, PieceKind::kHashOnly}}));
  EXPECT_FALSE(rule.Next({{0, kMiB, PieceKind::kHashAsZero}}));
}

TEST(CloneRuleTest, UnsupportedEndsTheAttempts) {
  CloneRule rule(true);
  auto pieces = Pieces({{0, kMiB, false}});
  EXPECT_TRUE(rule.Record(*rule.Next(pieces), CloneResult::kCloned));
  EXPECT_FALSE(rule.Record(*rule.Next(pieces), CloneResult::kUnsupported));
  EXPECT_FALSE(rule.Next(pieces));
}

TEST(CloneRuleTest, ARefusalBeforeAnyCloneEndsTheAttempts) {
  CloneRule rule(true);
  auto pieces = Pieces({{0, kMiB, false}});
  EXPECT_FALSE(rule.Record(*rule.Next(pieces), CloneResult::kRangeRefused));
  EXPECT_FALSE(rule.Next(Pieces({{8 * kMiB, kMiB, false}})));
}

TEST(CloneRuleTest, ARefusedRangeIsNotAskedAgainButLaterOnesAre) {
  CloneRule rule(true);
  EXPECT_TRUE(rule.Record(*rule.Next(Pieces({{0, kMiB, false}})), CloneResult::kCloned));
  auto refused = Pieces({{kMiB, kMiB, false}, {2 * kMiB, kMiB, false}});
  EXPECT_FALSE(rule.Record(*rule.Next(refused), CloneResult::kRangeRefused));
  // The rest of the refused range (its pieces copied a request at a time).
  EXPECT_FALSE(rule.Next(Pieces({{kMiB + 4096, kMiB - 4096, false}})));
  EXPECT_FALSE(rule.Next(Pieces({{2 * kMiB, kMiB, false}})));
  // Past it, clones are asked for again.
  EXPECT_TRUE(rule.Next(Pieces({{3 * kMiB, kMiB, false}})));
}

TEST(CloneRuleTest, TooManyRefusalsInARowEndTheAttempts) {
  CloneRule rule(true);
  EXPECT_TRUE(rule.Record(*rule.Next(Pieces({{0, kMiB, false}})), CloneResult::kCloned));
  uint64_t offset = kMiB;
  for (unsigned i = 0; i + 1 < CloneRule::kMaxRefusalsInARow; ++i, offset += kMiB) {
    EXPECT_FALSE(
        rule.Record(*rule.Next(Pieces({{offset, kMiB, false}})), CloneResult::kRangeRefused));
  }
  // One clone resets the count.
  EXPECT_TRUE(rule.Record(*rule.Next(Pieces({{offset, kMiB, false}})), CloneResult::kCloned));
  offset += kMiB;
  for (unsigned i = 0; i < CloneRule::kMaxRefusalsInARow; ++i, offset += kMiB) {
    ASSERT_TRUE(rule.Next(Pieces({{offset, kMiB, false}}))) << i;
    rule.Record(*rule.Next(Pieces({{offset, kMiB, false}})), CloneResult::kRangeRefused);
  }
  EXPECT_FALSE(rule.Next(Pieces({{offset, kMiB, false}})));
}

}  // namespace
}  // namespace nbdcopy
