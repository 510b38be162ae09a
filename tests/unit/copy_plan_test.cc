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

// What the engines read is derived once, by the plan: the planner's rules
// for the source's size, the batch, the adaptive request sizes, -v.
TEST(CopyPlanTest, ThePlanCarriesWhatTheEnginesRead) {
  Pair pair;
  Options options;
  options.verbose = true;
  CopyPlan plan = pair.Plan(options);
  EXPECT_TRUE(plan.verbose);
  EXPECT_EQ(plan.request_size, 1u << 20);
  EXPECT_EQ(plan.min_request_size, 256u << 10);  // adaptive down to 256K
  EXPECT_EQ(plan.queue_size, options.queue_size);
  EXPECT_EQ(plan.batch_size, 8 * plan.request_size);
  EXPECT_EQ(plan.rules.image_size, kSize);
  EXPECT_EQ(plan.rules.alignment, plan.alignment);
  EXPECT_EQ(plan.rules.max_data, plan.request_size);
  EXPECT_EQ(plan.rules.max_zero, kMaxZeroLength);
  EXPECT_EQ(plan.rules.coalesce_below, 64u << 10);
  EXPECT_TRUE(plan.rules.zero_extents);
  EXPECT_FALSE(plan.rules.skip_clean);
  EXPECT_TRUE(CheckFinishedFor(plan, pair.source).ok());
  EXPECT_FALSE(pair.Plan(Options{}).verbose);

  Options fixed;  // --request-size: no adaptation; --no-extents: zeroes are data
  fixed.request_size = 256 << 10;
  fixed.request_size_set = true;
  fixed.extents = false;
  plan = pair.Plan(fixed);
  EXPECT_EQ(plan.min_request_size, 256u << 10);
  EXPECT_EQ(plan.batch_size, 8u * (256 << 10));
  EXPECT_EQ(plan.rules.max_data, 256u << 10);
  EXPECT_FALSE(plan.rules.zero_extents);

  Options incremental;
  incremental.dirty_bitmap = "b0";
  EXPECT_TRUE(pair.Plan(incremental).rules.skip_clean);
}

TEST(CopyPlanTest, AStreamSourceHasNoImageSize) {
  Pair pair;
  pair.source.MakeStream();
  CopyPlan plan = pair.Plan(Options{});
  EXPECT_TRUE(plan.synchronous);
  EXPECT_EQ(plan.rules.image_size, 0u);
  EXPECT_EQ(plan.batch_size, 8 * plan.request_size);
}

TEST(CopyPlanTest, APlanSetByHandIsFinishedForItsImage) {
  CopyPlan plan;
  plan.request_size = 64 << 10;
  plan.queue_size = 16 << 10;  // below one request
  plan.alignment = 4096;
  plan.incremental = true;
  MemoryEndpoint source = MemoryEndpoint::Zeroes(kSize);
  EXPECT_FALSE(CheckFinishedFor(plan, source).ok());
  FinishPlan(kSize, &plan);
  EXPECT_TRUE(CheckFinishedFor(plan, source).ok());
  EXPECT_EQ(plan.min_request_size, 64u << 10);  // left 0: fixed
  EXPECT_EQ(plan.queue_size, 64u << 10);        // one request at least
  EXPECT_EQ(plan.batch_size, 8u * (64 << 10));
  EXPECT_EQ(plan.rules.max_zero, kMaxZeroLength / 4096 * 4096);
  EXPECT_TRUE(plan.rules.skip_clean);
  // Finished for another image, it is refused.
  MemoryEndpoint larger = MemoryEndpoint::Zeroes(2 * kSize);
  Status refused = CheckFinishedFor(plan, larger);
  EXPECT_EQ(refused.message(), "internal error: the plan was not finished for memory (FinishPlan)");
}

// --verify's and an incremental source's hashing: the copy's request shape,
// parallelism, rate cap and -v; nothing written, zeroed, cloned or flushed;
// zero extents hashed unread; the rules of the image read.
TEST(CopyPlanTest, AHashingPlanIsTheCopysWithoutItsWrites) {
  Pair pair;
  Options options;
  options.verbose = true;
  options.flush = true;
  options.rate = 1 << 20;
  options.extents = false;
  options.dirty_bitmap = "b0";
  options.synchronous = true;
  CopyPlan copy = pair.Plan(options);
  auto coverage = std::make_shared<Coverage>();
  EndpointInfo image = pair.destination.info();
  image.size = kSize / 2;
  image.can_extents = false;
  CopyPlan plan = HashingPlan(copy, image, coverage);
  EXPECT_EQ(plan.request_size, copy.request_size);
  EXPECT_EQ(plan.min_request_size, copy.min_request_size);
  EXPECT_EQ(plan.alignment, copy.alignment);
  EXPECT_EQ(plan.queue_size, copy.queue_size);
  EXPECT_EQ(plan.connections, copy.connections);
  EXPECT_EQ(plan.requests, copy.requests);
  EXPECT_EQ(plan.rate, copy.rate);
  EXPECT_EQ(plan.skip_costly_maps, copy.skip_costly_maps);
  EXPECT_TRUE(plan.verbose);
  EXPECT_FALSE(plan.synchronous);
  EXPECT_FALSE(plan.use_extents);
  EXPECT_TRUE(plan.zero_extents);
  EXPECT_FALSE(plan.incremental);
  EXPECT_EQ(plan.sparse_size, 0u);
  EXPECT_FALSE(plan.clone_data);
  EXPECT_FALSE(plan.allocated);
  EXPECT_FALSE(plan.skip_zero_ranges);
  EXPECT_FALSE(plan.flush);
  EXPECT_EQ(plan.notes, "");
  EXPECT_EQ(plan.coverage, coverage);
  EXPECT_EQ(plan.rules.image_size, kSize / 2);
  EXPECT_TRUE(plan.rules.zero_extents);
  EXPECT_FALSE(plan.rules.skip_clean);
  EXPECT_EQ(plan.batch_size, copy.batch_size);
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

// Into a destination another process serves, the budget keeps more in
// flight, so that the server's queue does not run dry between requests.
TEST(CopyPlanTest, AServedDestinationGetsTheLargerBudgetGain) {
  Pair local;
  Pair served;
  served.destination.mutable_info().served = true;
  Pair served_source;
  served_source.source.mutable_info().served = true;
  const double usual = local.Plan(Options{}).budget_gain;
  EXPECT_EQ(usual, 2.0);
  EXPECT_EQ(served.Plan(Options{}).budget_gain, 2 * usual);
  EXPECT_EQ(served_source.Plan(Options{}).budget_gain, usual);
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
  Options allocated;  // its reads are written whole: the maps say where the holes are
  allocated.allocated = true;
  EXPECT_FALSE(pair.Plan(allocated).skip_costly_maps);

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
