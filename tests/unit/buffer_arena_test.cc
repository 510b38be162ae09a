#include "engine/buffer_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace nbdcopy {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

TEST(BufferArenaTest, SmallBuffersTakeLittleRoom) {
  // A pool of request-size buffers would need 64 MiB for this.
  BufferArena arena(4 * kMiB, 64);
  std::vector<std::byte*> buffers;
  for (int i = 0; i < 64; ++i) {
    std::byte* buffer = arena.Take(4 * kKiB);
    ASSERT_NE(buffer, nullptr);
    buffers.push_back(buffer);
  }
  EXPECT_EQ(arena.bytes_taken(), 64 * 4 * kKiB);
  std::sort(buffers.begin(), buffers.end());
  EXPECT_LT(buffers.back() - buffers.front(), static_cast<ptrdiff_t>(kMiB));
}

TEST(BufferArenaTest, RefusesWhatDoesNotFitAndTakesItOnceFreed) {
  BufferArena arena(2 * kMiB, 4);
  std::byte* a = arena.Take(kMiB);
  std::byte* b = arena.Take(kMiB);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(arena.Take(kMiB), nullptr);  // the block is full
  arena.Give(a, kMiB);
  EXPECT_EQ(arena.Take(kMiB), a);
}

TEST(BufferArenaTest, FreedNeighboursMergeBackIntoOneRange) {
  BufferArena arena(kMiB, 4);
  std::byte* a = arena.Take(256 * kKiB);
  std::byte* b = arena.Take(256 * kKiB);
  std::byte* c = arena.Take(256 * kKiB);
  std::byte* d = arena.Take(256 * kKiB);
  ASSERT_NE(d, nullptr);
  arena.Give(b, 256 * kKiB);
  arena.Give(d, 256 * kKiB);
  arena.Give(c, 256 * kKiB);  // joins b's and d's ranges
  arena.Give(a, 256 * kKiB);
  EXPECT_EQ(arena.bytes_taken(), 0u);
  EXPECT_EQ(arena.Take(kMiB), a);  // the whole block again
}

TEST(BufferArenaTest, RandomUseNeverOverlapsAndAnEmptyArenaHasRoomForTheCapacity) {
  constexpr size_t kCapacity = 3 * kMiB;
  BufferArena arena(kCapacity, 64);
  std::mt19937 random(7);
  std::vector<std::pair<std::byte*, size_t>> held;
  size_t held_bytes = 0;
  for (int step = 0; step < 20000; ++step) {
    bool give = !held.empty() && (random() % 2 == 0 || held.size() >= 64);
    if (give) {
      size_t i = random() % held.size();
      auto [buffer, length] = held[i];
      // Its bytes are still its own.
      for (size_t k = 0; k < length; k += 997) {
        ASSERT_EQ(buffer[k], static_cast<std::byte>(reinterpret_cast<uintptr_t>(buffer) & 0xff));
      }
      arena.Give(buffer, length);
      held_bytes -= length;
      held.erase(held.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    size_t length = 1 + random() % kMiB;
    if (held_bytes + length > kCapacity) continue;  // the caller's budget keeps this
    std::byte* buffer = arena.Take(length);
    if (buffer == nullptr) {
      ASSERT_FALSE(held.empty()) << "an empty arena refused " << length << " bytes";
      continue;  // fragmented: the caller waits for buffers to come back
    }
    std::memset(buffer, static_cast<int>(reinterpret_cast<uintptr_t>(buffer) & 0xff), length);
    for (const auto& [other, other_length] : held) {
      ASSERT_TRUE(buffer + length <= other || other + other_length <= buffer) << "overlap";
    }
    held.emplace_back(buffer, length);
    held_bytes += length;
  }
  for (const auto& [buffer, length] : held) arena.Give(buffer, length);
  EXPECT_EQ(arena.bytes_taken(), 0u);
  EXPECT_NE(arena.Take(kCapacity), nullptr);
}

// The VmFlags line of the mapping in /proc/self/smaps that holds address.
std::string VmFlagsAt(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(BufferArenaTest, ABlockOfAHugePageOrMoreIsOfferedTransparentHugePages) {
  // One fault per 2 MiB touched instead of 512: aligned, and madvised.
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  BufferArena arena(14 * kMiB, 64);
  std::byte* buffer = arena.Take(kMiB);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % (2 * kMiB), 0u);
  std::string flags = VmFlagsAt(buffer);
  ASSERT_NE(flags, "") << "no mapping in /proc/self/smaps holds the arena";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

}  // namespace
}  // namespace nbdcopy
