// Block-status replies as extents (nbd_extents.h): what an NBD source says
// is zero, and for an incremental copy what it says is unchanged (clean),
// which the copy then skips. Every rule errs towards "data, changed".
#include "endpoints/nbd/nbd_extents.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nbdcopy {
namespace {

constexpr uint64_t K = 1024;
constexpr char kDirty[] = "qemu:dirty-bitmap:bitmap0";
constexpr uint32_t kStateHole = 1;  // base:allocation: unallocated

Extent Data(uint64_t offset, uint64_t length) { return {offset, length, false, false}; }
Extent Zero(uint64_t offset, uint64_t length) { return {offset, length, true, false}; }
Extent Clean(uint64_t offset, uint64_t length, bool zero = false) {
  return {offset, length, zero, true};
}

std::vector<Extent> Allocation(uint64_t offset, uint64_t length,
                               const std::vector<std::vector<uint32_t>>& chunks) {
  ContextExtents context(ContextExtents::Meaning::kAllocation, offset, length);
  for (const auto& chunk : chunks) context.AddChunk(chunk);
  return std::move(context).TakeExtents();
}

std::vector<Extent> Bitmap(uint64_t offset, uint64_t length,
                           const std::vector<std::vector<uint32_t>>& chunks) {
  ContextExtents context(ContextExtents::Meaning::kDirtyBitmap, offset, length);
  for (const auto& chunk : chunks) context.AddChunk(chunk);
  return std::move(context).TakeExtents();
}

// --- AppendExtent ---

TEST(NbdExtentsTest, AppendMergesOnlyAlikeExtentsOfThisRequest) {
  std::vector<Extent> out = {Data(0, 4 * K)};
  AppendExtent(&out, 1, Data(4 * K, 4 * K));  // index 0 is an earlier request's
  AppendExtent(&out, 1, Data(8 * K, 4 * K));
  AppendExtent(&out, 1, Zero(12 * K, 4 * K));
  AppendExtent(&out, 1, Clean(16 * K, 4 * K, true));
  EXPECT_EQ(out, (std::vector<Extent>{Data(0, 4 * K), Data(4 * K, 8 * K), Zero(12 * K, 4 * K),
                                      Clean(16 * K, 4 * K, true)}));
}

// --- One context's answer ---

TEST(NbdExtentsTest, AllocationZeroOnlyWithTheZeroFlag) {
  EXPECT_EQ(Allocation(
                0, 16 * K,
                {{4 * K, 0, 4 * K, kStateZero | kStateHole, 4 * K, kStateHole, 4 * K, kStateZero}}),
            (std::vector<Extent>{Data(0, 4 * K), Zero(4 * K, 4 * K), Data(8 * K, 4 * K),
                                 Zero(12 * K, 4 * K)}));
}

TEST(NbdExtentsTest, AllocationNeverMarksClean) {
  for (const Extent& e : Allocation(0, 8 * K, {{4 * K, 0, 4 * K, 0xffffffff}})) {
    EXPECT_FALSE(e.clean);
  }
}

TEST(NbdExtentsTest, BitmapCleanOnlyWithoutTheDirtyFlag) {
  EXPECT_EQ(Bitmap(0, 12 * K, {{4 * K, 0, 4 * K, kStateDirty, 4 * K, kStateZero}}),
            (std::vector<Extent>{Clean(0, 4 * K), Data(4 * K, 4 * K), Clean(8 * K, 4 * K)}));
}

TEST(NbdExtentsTest, AdjacentAlikeExtentsMerge) {
  EXPECT_EQ(Allocation(0, 12 * K, {{4 * K, 0, 4 * K, 0, 4 * K, kStateZero}}),
            (std::vector<Extent>{Data(0, 8 * K), Zero(8 * K, 4 * K)}));
}

TEST(NbdExtentsTest, StartsAtTheRequestOffset) {
  EXPECT_EQ(Allocation(1 << 20, 8 * K, {{8 * K, kStateZero}}),
            (std::vector<Extent>{Zero(1 << 20, 8 * K)}));
}

// Over-long replies: nothing past the request is believed.
TEST(NbdExtentsTest, OverLongReplyIsCutAtTheEndOfTheRequest) {
  EXPECT_EQ(Allocation(0, 6 * K, {{4 * K, 0, 1 << 30, kStateZero}}),
            (std::vector<Extent>{Data(0, 4 * K), Zero(4 * K, 2 * K)}));
  // An extra "zero" extent after the request's end (a lie) is dropped.
  EXPECT_EQ(Allocation(0, 4 * K, {{4 * K, 0, 64 * K, kStateZero}}),
            (std::vector<Extent>{Data(0, 4 * K)}));
}

TEST(NbdExtentsTest, ZeroLengthExtentEndsTheChunk) {
  EXPECT_TRUE(Allocation(0, 8 * K, {{0, 0, 8 * K, kStateZero}}).empty());
  EXPECT_EQ(Allocation(0, 8 * K, {{4 * K, 0, 0, kStateZero, 4 * K, kStateZero}}),
            (std::vector<Extent>{Data(0, 4 * K)}));
}

TEST(NbdExtentsTest, OddEntryCountIgnoresTheUnpairedLength) {
  EXPECT_EQ(Allocation(0, 8 * K, {{4 * K, 0, 4 * K}}), (std::vector<Extent>{Data(0, 4 * K)}));
}

// A second chunk for a context describes the range from its start again; read
// as continuing the first, its "zero" or "clean" would land on data.
TEST(NbdExtentsTest, OnlyTheFirstChunkCounts) {
  EXPECT_EQ(Allocation(0, 64 * K, {{4 * K, 0}, {64 * K, kStateZero}}),
            (std::vector<Extent>{Data(0, 4 * K)}));
  EXPECT_EQ(Bitmap(0, 64 * K, {{4 * K, kStateDirty}, {64 * K, 0}}),
            (std::vector<Extent>{Data(0, 4 * K)}));
}

// --- Merging base:allocation with a dirty bitmap ---

TEST(NbdExtentsTest, MergeSplitsAtBothContextsBoundaries) {
  std::vector<Extent> out;
  MergeContexts(0, {Data(0, 8 * K), Zero(8 * K, 8 * K)},
                {Clean(0, 4 * K), Data(4 * K, 8 * K), Clean(12 * K, 4 * K)}, &out);
  EXPECT_EQ(out, (std::vector<Extent>{Clean(0, 4 * K), Data(4 * K, 4 * K), Zero(8 * K, 4 * K),
                                      Clean(12 * K, 4 * K, true)}));
}

TEST(NbdExtentsTest, MergeTakesZeroOnlyFromAllocationAndCleanOnlyFromTheBitmap) {
  std::vector<Extent> out;
  MergeContexts(0, {Zero(0, 4 * K), Data(4 * K, 4 * K)}, {Data(0, 4 * K), Clean(4 * K, 4 * K)},
                &out);
  EXPECT_EQ(out, (std::vector<Extent>{Zero(0, 4 * K), Clean(4 * K, 4 * K)}));
}

// Mismatched lengths: only the prefix both describe is described.
TEST(NbdExtentsTest, MergeStopsWhereTheShorterAnswerStops) {
  std::vector<Extent> out;
  MergeContexts(0, {Zero(0, 4 * K)}, {Clean(0, 16 * K)}, &out);
  EXPECT_EQ(out, (std::vector<Extent>{Clean(0, 4 * K, true)}));

  out.clear();
  MergeContexts(0, {Zero(0, 16 * K)}, {Clean(0, 2 * K), Data(2 * K, 2 * K)}, &out);
  EXPECT_EQ(out, (std::vector<Extent>{Clean(0, 2 * K, true), Zero(2 * K, 2 * K)}));
}

TEST(NbdExtentsTest, MergeWithoutAllocationAnswerIsAllData) {
  std::vector<Extent> out;
  MergeContexts(8 * K, {}, {Clean(8 * K, 4 * K), Data(12 * K, 4 * K)}, &out);
  EXPECT_EQ(out, (std::vector<Extent>{Clean(8 * K, 4 * K), Data(12 * K, 4 * K)}));
}

TEST(NbdExtentsTest, MergeAppendsAfterEarlierExtents) {
  std::vector<Extent> out = {Data(0, 4 * K)};
  MergeContexts(4 * K, {Data(4 * K, 4 * K)}, {Data(4 * K, 4 * K)}, &out);
  EXPECT_EQ(out, (std::vector<Extent>{Data(0, 4 * K), Data(4 * K, 4 * K)}));
}

// --- One reply, both contexts ---

TEST(NbdExtentsTest, ReplyWithoutBitmapIsTheAllocationAnswer) {
  BlockStatusReply reply(0, 8 * K, "");
  reply.AddChunk(kDirty, std::vector<uint32_t>{8 * K, 0});  // not asked for: ignored
  reply.AddChunk(kBaseAllocation, std::vector<uint32_t>{4 * K, 0, 4 * K, kStateZero});
  std::vector<Extent> out = {Data(0, 0)};
  ASSERT_TRUE(std::move(reply).Finish(&out));
  EXPECT_EQ(out, (std::vector<Extent>{Data(0, 0), Data(0, 4 * K), Zero(4 * K, 4 * K)}));
}

TEST(NbdExtentsTest, ReplyIgnoresContextsNotAskedFor) {
  BlockStatusReply reply(0, 8 * K, kDirty);
  reply.AddChunk("qemu:dirty-bitmap:other", std::vector<uint32_t>{8 * K, 0});
  reply.AddChunk("qemu:allocation-depth", std::vector<uint32_t>{8 * K, kStateZero});
  std::vector<Extent> out;
  EXPECT_FALSE(std::move(reply).Finish(&out));
  EXPECT_TRUE(out.empty());
}

// No bitmap answer would read as "all clean": the request fails instead.
TEST(NbdExtentsTest, ReplyWithoutTheBitmapsAnswerFails) {
  BlockStatusReply reply(0, 8 * K, kDirty);
  reply.AddChunk(kBaseAllocation, std::vector<uint32_t>{8 * K, kStateZero});
  std::vector<Extent> out;
  EXPECT_FALSE(std::move(reply).Finish(&out));
  EXPECT_TRUE(out.empty());
}

TEST(NbdExtentsTest, ReplyMergesBothContexts) {
  BlockStatusReply reply(0, 16 * K, kDirty);
  reply.AddChunk(kDirty, std::vector<uint32_t>{8 * K, 0, 8 * K, kStateDirty});
  reply.AddChunk(kBaseAllocation, std::vector<uint32_t>{4 * K, kStateZero, 12 * K, 0});
  // A second bitmap chunk claiming all is unchanged: a lie that would skip data.
  reply.AddChunk(kDirty, std::vector<uint32_t>{16 * K, 0});
  std::vector<Extent> out;
  ASSERT_TRUE(std::move(reply).Finish(&out));
  EXPECT_EQ(out,
            (std::vector<Extent>{Clean(0, 4 * K, true), Clean(4 * K, 4 * K), Data(8 * K, 8 * K)}));
}

TEST(NbdExtentsTest, ReplyWithOnlyTheBitmapsAnswerIsData) {
  BlockStatusReply reply(0, 8 * K, kDirty);
  reply.AddChunk(kDirty, std::vector<uint32_t>{4 * K, 0, 4 * K, kStateDirty});
  std::vector<Extent> out;
  ASSERT_TRUE(std::move(reply).Finish(&out));
  EXPECT_EQ(out, (std::vector<Extent>{Clean(0, 4 * K), Data(4 * K, 4 * K)}));
}

// --- Several requests: short replies and failures ---

// A fake server: each request is answered by the next of `replies` (or the
// last again), describing at most that many bytes from the request's start
// as one extent, zero or data; a negative number fails the request.
struct FakeServer {
  explicit FakeServer(std::vector<int64_t> replies, bool zero = false)
      : replies(std::move(replies)), zero(zero) {}

  std::vector<int64_t> replies;
  bool zero;
  std::vector<std::pair<uint64_t, uint64_t>> requests;  // offset, length

  Status operator()(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
    int64_t reply = replies[std::min(requests.size(), replies.size() - 1)];
    requests.emplace_back(offset, length);
    if (reply < 0) return Status::Error("fake: EIO");
    uint64_t described = std::min<uint64_t>(reply, length);
    if (described > 0) out->push_back(Extent{offset, described, zero, false});
    return Status::Ok();
  }
};

Status Describe(FakeServer& server, uint64_t offset, uint64_t length, std::vector<Extent>* out,
                uint64_t max_length = kMaxExtentsLength) {
  return DescribeExtents("nbd://x", offset, length, max_length, std::ref(server), out);
}

TEST(NbdExtentsTest, DescribeAsksUntilTheRangeIsDescribed) {
  FakeServer server({64 * K}, /*zero=*/true);
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 256 * K, &out).ok());
  EXPECT_EQ(server.requests.size(), 4u);
  EXPECT_EQ(server.requests[1], std::make_pair(64 * K, 192 * K));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.back(), Zero(192 * K, 64 * K));
}

// A server describing a little per reply cannot make every request tiny:
// after kExtentsRounds replies, the rest of kMinDescribed is data.
TEST(NbdExtentsTest, DescribeGivesUpOnShortRepliesWithData) {
  FakeServer server({512}, /*zero=*/true);
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 1ULL << 30, &out).ok());
  EXPECT_EQ(server.requests.size(), static_cast<size_t>(kExtentsRounds));
  ASSERT_EQ(out.size(), static_cast<size_t>(kExtentsRounds) + 1);
  EXPECT_EQ(out.back(), Data(kExtentsRounds * 512, kMinDescribed - kExtentsRounds * 512));
}

TEST(NbdExtentsTest, DescribePadsNoFurtherThanTheRange) {
  FakeServer server({4 * K, 0});
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 12 * K, &out).ok());
  // The second reply made no progress; the padding merges into the data.
  EXPECT_EQ(server.requests.size(), 2u);
  EXPECT_EQ(out, (std::vector<Extent>{Data(0, 12 * K)}));
}

TEST(NbdExtentsTest, DescribeNothingFails) {
  FakeServer server({0});
  std::vector<Extent> out;
  Status status = Describe(server, 4 * K, 8 * K, &out);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "nbd://x: extents at offset 4096 length 8192: server described nothing");
  EXPECT_EQ(server.requests.size(), 1u);
  EXPECT_TRUE(out.empty());
}

TEST(NbdExtentsTest, DescribeFailureWithoutProgressFails) {
  FakeServer server({-1});
  std::vector<Extent> out = {Data(0, 4 * K)};
  Status status = Describe(server, 4 * K, 8 * K, &out);
  EXPECT_EQ(status.message(), "fake: EIO");
  EXPECT_EQ(out.size(), 1u);
}

TEST(NbdExtentsTest, DescribeFailureAfterProgressKeepsWhatWasDescribed) {
  FakeServer server({4 * K, -1}, /*zero=*/true);
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 4 * kMinDescribed, &out).ok());
  EXPECT_EQ(out, (std::vector<Extent>{Zero(0, 4 * K), Data(4 * K, kMinDescribed - 4 * K)}));
}

TEST(NbdExtentsTest, DescribeAsksAtMostMaxExtentsLength) {
  FakeServer server({static_cast<int64_t>(kMaxExtentsLength)});
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 4 * kMaxExtentsLength, &out).ok());
  ASSERT_EQ(server.requests.size(), 1u);
  EXPECT_EQ(server.requests[0].second, kMaxExtentsLength);
  EXPECT_EQ(out, (std::vector<Extent>{Data(0, kMaxExtentsLength)}));
}

// --- Wide block status (extended headers): 64-bit lengths ---

constexpr uint64_t kTiB = K * K * K * K;

TEST(NbdExtentsTest, AWideChunkDescribesTiBInOneExtent) {
  ContextExtents context(ContextExtents::Meaning::kAllocation, 0, 64 * kTiB);
  const std::vector<BlockStatusEntry> chunk = {{K * K, 0},
                                               {32 * kTiB - K * K, kStateZero | kStateHole},
                                               {K * K, 0},
                                               {64 * kTiB, kStateZero}};
  context.AddChunk(chunk);
  // The last entry is cut at the end of the request.
  EXPECT_EQ(
      std::move(context).TakeExtents(),
      (std::vector<Extent>{Data(0, K * K), Zero(K * K, 32 * kTiB - K * K), Data(32 * kTiB, K * K),
                           Zero(32 * kTiB + K * K, 32 * kTiB - K * K)}));
}

TEST(NbdExtentsTest, AWideReplyRoutesEachContextAsANarrowOneDoes) {
  BlockStatusReply reply(0, 8 * kTiB, kDirty);
  const std::vector<BlockStatusEntry> allocation = {{8 * kTiB, kStateZero}};
  const std::vector<BlockStatusEntry> bitmap = {{4 * kTiB, 0}, {4 * kTiB, kStateDirty}};
  const std::vector<BlockStatusEntry> other = {{8 * kTiB, 0}};
  reply.AddChunk("qemu:allocation-depth", other);  // not asked for: ignored
  reply.AddChunk(kBaseAllocation, allocation);
  reply.AddChunk(kDirty, bitmap);
  std::vector<Extent> out;
  ASSERT_TRUE(std::move(reply).Finish(&out));
  EXPECT_EQ(out, (std::vector<Extent>{Clean(0, 4 * kTiB, true), Zero(4 * kTiB, 4 * kTiB)}));
}

TEST(NbdExtentsTest, DescribeAsksForTiBAtOnceWhenWide) {
  FakeServer server({static_cast<int64_t>(64 * kTiB)}, /*zero=*/true);
  std::vector<Extent> out;
  ASSERT_TRUE(Describe(server, 0, 64 * kTiB, &out, kMaxWideExtentsLength).ok());
  ASSERT_EQ(server.requests.size(), 1u);
  EXPECT_EQ(server.requests[0].second, 64 * kTiB);
  EXPECT_EQ(out, (std::vector<Extent>{Zero(0, 64 * kTiB)}));
}

}  // namespace
}  // namespace nbdcopy
