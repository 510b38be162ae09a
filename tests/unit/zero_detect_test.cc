#include "base/zero_detect.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nbdcopy {
namespace {

// The runs ForEachZeroRun reports, as "offset+length:z|d" words.
std::string Runs(uint64_t offset, const std::vector<std::byte>& data, uint64_t granule) {
  std::string text;
  Status status = ForEachZeroRun(
      offset, data, granule, [&](uint64_t at, std::span<const std::byte> run, bool zero) {
        if (!text.empty()) text += ' ';
        text += std::to_string(at) + "+" + std::to_string(run.size()) + (zero ? ":z" : ":d");
        return Status::Ok();
      });
  EXPECT_TRUE(status.ok());
  return text;
}

std::vector<std::byte> Bytes(size_t size, std::initializer_list<size_t> nonzero) {
  std::vector<std::byte> data(size);
  for (size_t at : nonzero) data[at] = std::byte{1};
  return data;
}

TEST(ZeroDetectTest, IsZero) {
  EXPECT_TRUE(IsZero({}));
  EXPECT_TRUE(IsZero(Bytes(4096, {})));
  EXPECT_FALSE(IsZero(Bytes(4096, {0})));
  EXPECT_FALSE(IsZero(Bytes(4096, {4095})));
}

TEST(ZeroDetectTest, RunsOfWholeBlocks) {
  EXPECT_EQ(Runs(0, Bytes(16, {0, 13}), 4), "0+4:d 4+8:z 12+4:d");
  EXPECT_EQ(Runs(0, Bytes(16, {}), 4), "0+16:z");
  EXPECT_EQ(Runs(0, Bytes(16, {3, 7, 11, 15}), 4), "0+16:d");
}

TEST(ZeroDetectTest, BlocksAreAlignedInTheImageNotTheBuffer) {
  // The buffer starts 2 bytes into a 4-byte block: its first block is 2 bytes.
  EXPECT_EQ(Runs(6, Bytes(10, {0}), 4), "6+2:d 8+8:z");
  EXPECT_EQ(Runs(6, Bytes(10, {9}), 4), "6+6:z 12+4:d");
}

TEST(ZeroDetectTest, AShortLastBlockIsARunOfItsOwn) {
  EXPECT_EQ(Runs(0, Bytes(10, {0}), 4), "0+4:d 4+6:z");
  EXPECT_EQ(Runs(0, Bytes(10, {9}), 4), "0+8:z 8+2:d");
}

TEST(ZeroDetectTest, EmptyDataHasNoRuns) { EXPECT_EQ(Runs(0, {}, 4), ""); }

TEST(ZeroDetectTest, TheFirstFailureStopsTheWalk) {
  int calls = 0;
  Status status =
      ForEachZeroRun(0, Bytes(16, {0, 13}), 4, [&](uint64_t, std::span<const std::byte>, bool) {
        ++calls;
        return Status::Error("stop");
      });
  EXPECT_EQ(status.message(), "stop");
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace nbdcopy
