// Incremental copies through both engines: only dirty ranges are read,
// written or zeroed; holes inside them are zeroed onto the old copy.
#include <gtest/gtest.h>

#include <random>

#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "job/progress.h"
#include "plan/incremental.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;
using fakes::Operation;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kSize = 8 * kMiB;

struct Range {
  uint64_t offset, length;
};
// Changed since the checkpoint: new data, a new 1 MiB hole, new data in a
// range straddling a request boundary.
const Range kDirty[] = {{kMiB, 64 * kKiB}, {3 * kMiB, kMiB}, {6 * kMiB - 64 * kKiB, 128 * kKiB}};
// Differs between source and old copy although the bitmap calls it clean:
// an incremental copy must leave it alone (it trusts the bitmap).
const Range kUntracked = {5 * kMiB, 4 * kKiB};

std::vector<std::byte> Random(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (auto& b : bytes) b = std::byte(1 + rng() % 255);
  return bytes;
}

bool Inside(const Operation& op, const Range& range) {
  return op.offset >= range.offset && op.offset + op.length <= range.offset + range.length;
}

bool InsideDirty(const Operation& op) {
  for (const Range& range : kDirty) {
    if (Inside(op, range)) return true;
  }
  return false;
}

// workers == 0: the synchronous engine.
class IncrementalCopyTest : public ::testing::TestWithParam<unsigned> {};

TEST_P(IncrementalCopyTest, OnlyDirtyRangesAreTouched) {
  const std::vector<std::byte> old_copy = Random(kSize, 1);
  std::vector<std::byte> now = old_copy;
  auto fresh = Random(kSize, 2);
  for (const Range& r : {kDirty[0], kDirty[2], kUntracked}) {
    std::copy_n(fresh.begin() + r.offset, r.length, now.begin() + r.offset);
  }
  std::fill_n(now.begin() + kDirty[1].offset, kDirty[1].length, std::byte{0});

  MemoryEndpoint source(now, "src");
  MemoryEndpoint destination(old_copy, "dst");
  source.AddZeroExtent(kDirty[1].offset, kDirty[1].length);
  uint64_t position = 0;
  for (const Range& r : kDirty) {
    source.AddCleanExtent(position, r.offset - position);
    position = r.offset + r.length;
  }
  source.AddCleanExtent(position, kSize - position);

  CopyPlan plan;
  plan.request_size = 256 * kKiB;
  plan.queue_size = kMiB;
  plan.requests = 8;
  plan.sparse_size = 4096;
  plan.alignment = 4096;
  plan.coalesce_below = 64 * kKiB;
  plan.incremental = true;
  plan.synchronous = GetParam() == 0;
  plan.connections = std::max(1u, GetParam());
  FinishPlan(kSize, &plan);
  uint64_t dirty_bytes = 0;
  for (const Range& r : kDirty) dirty_bytes += r.length;
  Progress progress(ProgressMode::kNone, -1, dirty_bytes);
  CopyStats stats;
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  Status status = plan.synchronous ? SyncCopy(plan, source, destination, books, nullptr, &stats)
                                   : ParallelCopy(plan, source, destination, books, &stats);
  ASSERT_TRUE(status.ok()) << status.message();

  std::vector<std::byte> expected = now;
  std::copy_n(old_copy.begin() + kUntracked.offset, kUntracked.length,
              expected.begin() + kUntracked.offset);
  EXPECT_TRUE(destination.data() == expected);
  EXPECT_EQ(progress.copied(), dirty_bytes);
  EXPECT_EQ(stats.bytes_zeroed, kMiB);  // the new hole overwrites old data
  EXPECT_EQ(stats.bytes_skipped, 0u);
  for (const Operation& op : source.log()) {
    if (op.op == "read") {
      EXPECT_TRUE(InsideDirty(op)) << op;
    }
  }
  for (const Operation& op : destination.log()) {
    if (op.op == "write" || op.op == "zero") {
      EXPECT_TRUE(InsideDirty(op)) << op;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, IncrementalCopyTest, ::testing::Values(0u, 1u, 3u));

TEST(IncrementalCopySummarizeDirtyTest, CountsWhatTheCopyWillMove) {
  MemoryEndpoint source(Random(kSize, 3), "src");
  uint64_t position = 0, dirty_bytes = 0;
  for (const Range& r : kDirty) {
    source.AddCleanExtent(position, r.offset - position);
    position = r.offset + r.length;
    dirty_bytes += r.length;
  }
  source.AddCleanExtent(position, kSize - position);
  CopyPlan plan;
  plan.request_size = 256 * kKiB;
  plan.alignment = 4096;
  plan.incremental = true;
  FinishPlan(kSize, &plan);
  Result<DirtySummary> summary = SummarizeDirty(plan, source);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->dirty_bytes, dirty_bytes);
  EXPECT_EQ(summary->ranges, 3u);  // operations split at request_size still form one range
  EXPECT_EQ(summary->clean_bytes, kSize - dirty_bytes);
  for (const Operation& op : source.log()) EXPECT_NE(op.op, "read") << op;  // no data read
  EXPECT_EQ(DescribeDirty(*summary, kSize),
            "dirty=" + std::to_string(dirty_bytes) + " ranges=3 clean=" +
                std::to_string(kSize - dirty_bytes) + " size=" + std::to_string(kSize));
}

}  // namespace
}  // namespace nbdcopy
