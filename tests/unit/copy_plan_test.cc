#include "plan/copy_plan.h"

#include <gtest/gtest.h>

#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;

constexpr size_t kSize = 1 << 20;

// A source with extents and a destination that zeroes cheaply.
struct Pair {
  Pair() : source(MemoryEndpoint::Zeroes(kSize)), destination(MemoryEndpoint::Zeroes(kSize)) {
    source.AddZeroExtent(0, kSize);
  }
  CopyPlan Plan(const Options& options) {
    Result<CopyPlan> plan = MakeCopyPlan(options, source, destination);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    return plan.ok() ? *plan : CopyPlan{};
  }
  MemoryEndpoint source;
  MemoryEndpoint destination;
};

TEST(CopyPlanTest, DefaultsSkipCostlyMapsAndClone) {
  Pair pair;
  CopyPlan plan = pair.Plan(Options{});
  EXPECT_TRUE(plan.skip_costly_maps);
  EXPECT_TRUE(plan.clone_data);
}

TEST(CopyPlanTest, AQueueBelowTheRequestSizeIsRaisedAndSaysSo) {
  Pair pair;
  Options small_queue;
  small_queue.request_size = 1 << 20;
  small_queue.queue_size = 64 << 10;
  CopyPlan plan = pair.Plan(small_queue);
  EXPECT_EQ(plan.queue_size, 1u << 20);
  EXPECT_EQ(plan.notes, "nbdcopy: queue size 65536 raised to 1048576, the request size\n");
  EXPECT_EQ(pair.Plan(Options{}).notes, "");
}

TEST(CopyPlanTest, MapsAreAlwaysAskedWithoutZeroDetection) {
  Pair pair;
  Options no_detection;
  no_detection.sparse_size = 0;
  EXPECT_FALSE(pair.Plan(no_detection).skip_costly_maps);
  Options coarse;  // detection coarser than the holes that ride along
  coarse.sparse_size = 1 << 20;
  EXPECT_FALSE(pair.Plan(coarse).skip_costly_maps);
  Options no_extents;
  no_extents.extents = false;
  EXPECT_FALSE(pair.Plan(no_extents).skip_costly_maps);

  Pair slow_zero;
  slow_zero.destination.mutable_info().efficient_zero = false;
  EXPECT_FALSE(slow_zero.Plan(Options{}).skip_costly_maps);
}

TEST(CopyPlanTest, IncrementalCopiesAlwaysAskAndNeverClone) {
  Pair pair;
  Options incremental;
  incremental.dirty_bitmap = "b1";
  CopyPlan plan = pair.Plan(incremental);
  EXPECT_FALSE(plan.skip_costly_maps);
  EXPECT_FALSE(plan.clone_data);
}

TEST(CopyPlanTest, NoCloneWhenTheBytesMustBeReadOrAllocated) {
  Pair pair;
  Options hashed;
  hashed.blkhash = BlkhashSpec{};
  EXPECT_FALSE(pair.Plan(hashed).clone_data);
  Options verified;
  verified.verify = true;
  EXPECT_FALSE(pair.Plan(verified).clone_data);
  Options allocated;
  allocated.allocated = true;
  EXPECT_FALSE(pair.Plan(allocated).clone_data);
}

}  // namespace
}  // namespace nbdcopy
