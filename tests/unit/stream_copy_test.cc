#include "engine/stream_copy.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;

// A destination of 10 bytes in 4-byte blocks, holding 100, 101, ...
MemoryEndpoint BlockDestination(size_t size = 10, uint32_t block = 4) {
  std::vector<std::byte> old(size);
  for (size_t i = 0; i < size; ++i) old[i] = std::byte(100 + i);
  MemoryEndpoint destination(old);
  destination.mutable_info().min_block_size = block;
  return destination;
}

TEST(StreamCopyPadToDestinationBlockTest, TheLastChunkIsPaddedWithTheDestinationsBytes) {
  MemoryEndpoint destination = BlockDestination();
  std::vector<std::byte> buffer(8, std::byte{7});
  // Bytes [4, 6) of the stream end inside the block [4, 8).
  Result<size_t> stored = PadToDestinationBlock(destination, 4, 2, buffer);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_EQ(*stored, 4u);
  EXPECT_EQ(buffer[1], std::byte{7});    // the stream's own bytes stay
  EXPECT_EQ(buffer[2], std::byte{106});  // then what the destination had at 6, 7
  EXPECT_EQ(buffer[3], std::byte{107});
}

TEST(StreamCopyPadToDestinationBlockTest, NothingToPad) {
  std::vector<std::byte> buffer(8);
  MemoryEndpoint destination = BlockDestination();
  EXPECT_EQ(*PadToDestinationBlock(destination, 0, 4, buffer), 4u);  // ends on a block
  EXPECT_EQ(*PadToDestinationBlock(destination, 8, 2, buffer), 2u);  // at the destination's end
  MemoryEndpoint any = BlockDestination(10, 1);
  EXPECT_EQ(*PadToDestinationBlock(any, 0, 3, buffer), 3u);  // no block rule
  MemoryEndpoint page_cache = BlockDestination();
  page_cache.mutable_info().partial_blocks_ok = true;
  EXPECT_EQ(*PadToDestinationBlock(page_cache, 0, 3, buffer), 3u);
}

TEST(StreamCopyPadToDestinationBlockTest, InsideTheShortLastBlockPadsToTheDestinationsEnd) {
  MemoryEndpoint destination = BlockDestination();  // 10 bytes: [8, 10) is a short block
  std::vector<std::byte> buffer(8);
  EXPECT_EQ(*PadToDestinationBlock(destination, 8, 1, buffer), 2u);
  EXPECT_EQ(buffer[1], std::byte{109});
}

TEST(StreamCopyPadToDestinationBlockTest, APaddedChunkLargerThanTheBufferIsAnError) {
  MemoryEndpoint destination = BlockDestination();
  std::vector<std::byte> buffer(3);
  Result<size_t> stored = PadToDestinationBlock(destination, 0, 2, buffer);
  ASSERT_FALSE(stored.ok());
  EXPECT_NE(stored.status().message().find("last block does not fit"), std::string::npos);
}

}  // namespace
}  // namespace nbdcopy
