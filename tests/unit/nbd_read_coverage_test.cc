// NbdEndpoint::Command::Covered: a read succeeds only when the server's
// chunks cover the requested range exactly once, in any order.
#include <gtest/gtest.h>

#include "endpoints/nbd/nbd_endpoint.h"

namespace nbdcopy {
namespace {

// A read of [1000, 1000 + 300) that received `chunks` (offset, length) in
// this order, as OnReadChunk records them.
bool Covered(std::vector<std::pair<uint64_t, uint64_t>> chunks) {
  NbdEndpoint::Command command{};
  command.offset = 1000;
  command.length = 300;
  command.filled = command.offset;
  for (auto [offset, length] : chunks) {
    if (offset == command.filled) {
      command.filled += length;
    } else {
      command.scattered.emplace_back(offset, length);
    }
  }
  return command.Covered();
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
  EXPECT_FALSE(Covered({{1000, 150}}));
  EXPECT_FALSE(Covered({{1150, 150}}));
}

TEST(NbdReadCoverageTest, GapsAndOverlaps) {
  EXPECT_FALSE(Covered({{1000, 100}, {1200, 100}}));               // a gap
  EXPECT_FALSE(Covered({{1000, 150}, {1000, 150}}));               // the first half twice
  EXPECT_FALSE(Covered({{1000, 200}, {1100, 200}}));               // an overlap, too long
  EXPECT_FALSE(Covered({{1000, 100}, {1150, 100}, {1050, 100}}));  // overlap, same total
}

}  // namespace
}  // namespace nbdcopy
