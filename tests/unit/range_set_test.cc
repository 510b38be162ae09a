#include "base/range_set.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace nbdcopy {
namespace {

using Range = RangeSet::Range;

TEST(RangeSetTest, AddMergesOverlappingAndTouchingRuns) {
  RangeSet set;
  set.Add(10, 10);
  set.Add(30, 10);
  EXPECT_EQ(set.Runs(), (std::vector<Range>{{10, 10}, {30, 10}}));
  set.Add(20, 10);  // touches both
  EXPECT_EQ(set.Runs(), (std::vector<Range>{{10, 30}}));
  set.Add(5, 50);
  EXPECT_EQ(set.Runs(), (std::vector<Range>{{5, 50}}));
  EXPECT_EQ(set.bytes(), 50u);
  set.Add(100, 0);
  EXPECT_EQ(set.size(), 1u);
}

TEST(RangeSetTest, RemoveSplitsRuns) {
  RangeSet set;
  set.Add(0, 100);
  set.Remove(40, 20);
  EXPECT_EQ(set.Runs(), (std::vector<Range>{{0, 40}, {60, 40}}));
  set.Remove(0, 10);
  set.Remove(90, 50);
  EXPECT_EQ(set.Runs(), (std::vector<Range>{{10, 30}, {60, 30}}));
  EXPECT_EQ(set.bytes(), 60u);
  set.Remove(0, 1000);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.bytes(), 0u);
}

TEST(RangeSetTest, ContainsBytesInAndGaps) {
  RangeSet set;
  set.Add(10, 10);
  set.Add(40, 10);
  EXPECT_TRUE(set.Contains(12, 8));
  EXPECT_FALSE(set.Contains(12, 9));
  EXPECT_FALSE(set.Contains(0, 1));
  EXPECT_EQ(set.BytesIn(0, 100), 20u);
  EXPECT_EQ(set.BytesIn(15, 30), 10u);
  EXPECT_EQ(set.Gaps(60), (std::vector<Range>{{0, 10}, {20, 20}, {50, 10}}));
  EXPECT_EQ(set.Gaps(45), (std::vector<Range>{{0, 10}, {20, 20}}));
}

TEST(RangeSetTest, AlignedInwardKeepsWholeBlocksAndTheShortTail) {
  RangeSet set;
  set.Add(100, 5000);   // [100, 5100): block [4096, 8192) not whole
  set.Add(8192, 4096);  // exactly one block
  set.Add(20000, 500);  // reaches the image's end (20500)
  RangeSet aligned = set.AlignedInward(4096, 20500);
  EXPECT_EQ(aligned.Runs(), (std::vector<Range>{{8192, 4096}, {20480, 20}}));
}

// Against a byte map, with random operations.
TEST(RangeSetTest, MatchesAByteMap) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<bool> bytes(256);
    RangeSet set;
    for (int op = 0; op < 20; ++op) {
      uint64_t offset = random() % 256;
      uint64_t length = random() % (257 - offset);
      bool add = random() % 3 != 0;
      if (add) {
        set.Add(offset, length);
      } else {
        set.Remove(offset, length);
      }
      for (uint64_t i = offset; i < offset + length; ++i) bytes[i] = add;
    }
    std::vector<bool> from_set(256);
    uint64_t previous_end = 0;
    bool first = true;
    for (const Range& run : set.Runs()) {
      ASSERT_GT(run.length, 0u);
      if (!first) {
        ASSERT_GT(run.offset, previous_end);  // disjoint, not touching
      }
      first = false;
      previous_end = run.end();
      for (uint64_t i = run.offset; i < run.end(); ++i) from_set[i] = true;
    }
    ASSERT_EQ(from_set, bytes);
    uint64_t count = 0;
    for (bool b : bytes) count += b;
    ASSERT_EQ(set.bytes(), count);
  }
}

}  // namespace
}  // namespace nbdcopy
