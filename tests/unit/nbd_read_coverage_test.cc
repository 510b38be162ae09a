// ReadCoverage: a read succeeds only when the server's chunks cover the
// requested range exactly once, in any order (the check OnReadChunk feeds).
#include "endpoints/nbd/nbd_read_coverage.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace nbdcopy {
namespace {

// A read of [1000, 1000 + 300) that received `chunks` (offset, length) in
// this order.
bool Covered(const std::vector<std::pair<uint64_t, uint64_t>>& chunks) {
  ReadCoverage coverage;
  coverage.Reset(1000, 300);
  for (auto [offset, length] : chunks) coverage.AddChunk(offset, length);
  return coverage.CoveredExactlyOnce();
}

TEST(NbdReadCoverageTest, InOrderChunksCoveringTheRange) {
  EXPECT_TRUE(Covered({{1000, 300}}));
  EXPECT_TRUE(Covered({{1000, 100}, {1100, 200}}));
}

TEST(NbdReadCoverageTest, OutOfOrderChunksCoveringTheRange) {
  EXPECT_TRUE(Covered({{1200, 100}, {1000, 100}, {1100, 100}}));
  EXPECT_TRUE(Covered({{1100, 200}, {1000, 100}}));
}

TEST(NbdReadCoverageTest, ShortOrNoReply) {
  EXPECT_FALSE(Covered({}));
  EXPECT_FALSE(Covered({{1000, 150}}));               // the tail missing
  EXPECT_FALSE(Covered({{1150, 150}}));               // the head missing
  EXPECT_FALSE(Covered({{1100, 100}, {1000, 100}}));  // out of order, the tail missing
}

TEST(NbdReadCoverageTest, GapsAndOverlaps) {
  EXPECT_FALSE(Covered({{1000, 100}, {1200, 100}}));               // a gap
  EXPECT_FALSE(Covered({{1000, 150}, {1000, 150}}));               // the first half twice
  EXPECT_FALSE(Covered({{1000, 200}, {1100, 200}}));               // an overlap, too long
  EXPECT_FALSE(Covered({{1000, 100}, {1150, 100}, {1050, 100}}));  // overlap, same total
  EXPECT_FALSE(Covered({{1100, 100}, {1100, 100}, {1000, 100}}));  // a scattered chunk twice
  EXPECT_FALSE(Covered({{1000, 100}, {1200, 100}, {1150, 100}}));  // gap, then overlap, same total
}

TEST(NbdReadCoverageTest, ZeroLengthRead) {
  ReadCoverage coverage;
  coverage.Reset(4096, 0);
  EXPECT_TRUE(coverage.CoveredExactlyOnce());
}

// The checkers are pooled: what one read received must not count for the next.
TEST(NbdReadCoverageTest, ResetForgetsTheLastRead) {
  ReadCoverage coverage;
  coverage.Reset(0, 100);
  coverage.AddChunk(50, 50);
  coverage.AddChunk(0, 50);
  ASSERT_TRUE(coverage.CoveredExactlyOnce());

  coverage.Reset(0, 100);
  EXPECT_FALSE(coverage.CoveredExactlyOnce());
  coverage.AddChunk(0, 50);
  EXPECT_FALSE(coverage.CoveredExactlyOnce());  // the old [50, 100) is gone

  coverage.Reset(200, 100);
  coverage.AddChunk(200, 100);
  EXPECT_TRUE(coverage.CoveredExactlyOnce());
}

}  // namespace
}  // namespace nbdcopy
