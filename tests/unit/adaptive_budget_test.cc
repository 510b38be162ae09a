#include "engine/adaptive_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "support/fake_clock.h"

namespace nbdcopy {
namespace {

using fakes::FakeClock;
using std::chrono::duration_cast;
using std::chrono::nanoseconds;

constexpr uint64_t kMiB = 1 << 20;

// A pipeline model: each request takes `round_trip` unloaded, and the
// server delivers at most `bandwidth` bytes/s (requests queue behind each
// other). `jitter` stretches every service time by up to that fraction.
struct Pipeline {
  double round_trip;  // seconds
  double bandwidth;   // bytes per second
  double jitter = 0;
  // Service time factors for requests above (below) 256 KiB (1 MiB): servers
  // to whom a large (small) request costs more per byte.
  double large_cost = 1;
  double small_cost = 1;
  // Seconds a MiB adds to a request's round trip, requests overlapping (a
  // server that takes its time per byte, in many threads at once).
  double delay_per_mib = 0;
};

struct Outcome {
  uint64_t final_budget;
  uint64_t final_request;
  uint64_t max_budget_late;  // largest budget in the second half
  uint64_t min_budget_late;
  double throughput;  // bytes/s over the run
};

// Drives a worker's admission loop (as ParallelCopy does: a request starts
// when it fits the budget or nothing is in flight) for `seconds` of model time.
Outcome Simulate(const Pipeline& pipeline, uint64_t request, uint64_t limit, double seconds,
                 uint64_t min_request = 0, double gain = AdaptiveBudget::kGain) {
  FakeClock clock;  // model time
  AdaptiveBudget budget(min_request ? min_request : request, request, limit, clock.now(), gain);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> stretch(1.0, 1.0 + pipeline.jitter);
  struct InFlight {
    double started, done;
    uint64_t bytes;
    bool alone;
  };
  std::deque<InFlight> in_flight;
  const Clock::time_point origin{};
  auto at = [&](double t) {
    return origin + duration_cast<Clock::duration>(nanoseconds(static_cast<int64_t>(t * 1e9)));
  };
  double now = 1.0, server_free = 1.0, end = 1.0 + seconds;
  uint64_t delivered = 0;
  Outcome outcome{0, 0, 0, UINT64_MAX, 0};
  uint64_t bytes_in_flight = 0;
  while (now < end) {
    for (;;) {
      uint64_t size = budget.request_size();
      if (!in_flight.empty() && bytes_in_flight + size > budget.budget()) break;
      double cost = size > 256 * 1024 ? pipeline.large_cost : 1.0;
      if (size < kMiB) cost *= pipeline.small_cost;
      double service = size / pipeline.bandwidth * cost * stretch(rng);
      double round_trip = pipeline.round_trip + pipeline.delay_per_mib * size / kMiB;
      double done = std::max(now + round_trip * stretch(rng), server_free + service);
      server_free = std::max(server_free, now) + service;
      in_flight.push_back({now, done, size, in_flight.empty()});
      bytes_in_flight += size;
    }
    InFlight first = in_flight.front();
    in_flight.pop_front();
    now = first.done;
    delivered += first.bytes;
    bytes_in_flight -= first.bytes;
    clock.time = at(now);
    budget.OnDone(first.bytes, at(first.started), first.alone);
    if (now > 1.0 + seconds / 2 && !budget.probing()) {
      outcome.max_budget_late = std::max(outcome.max_budget_late, budget.budget());
      outcome.min_budget_late = std::min(outcome.min_budget_late, budget.budget());
    }
  }
  outcome.final_budget = budget.budget();
  outcome.final_request = budget.request_size();
  outcome.throughput = delivered / seconds;
  return outcome;
}

TEST(AdaptiveBudgetTest, FastServerKeepsAFewRequestsInFlight) {
  // 0.3 ms round trip at 3 GB/s: about 1 MiB in the pipe, so 2 MiB of
  // budget with the gain, far below the 12 MiB limit.
  Outcome o = Simulate({0.0003, 3e9}, kMiB, 12 * kMiB, 2.0);
  EXPECT_GE(o.final_budget, 2 * kMiB);
  EXPECT_LE(o.max_budget_late, 3 * kMiB);
  EXPECT_GT(o.throughput, 0.9 * 3e9);
}

TEST(AdaptiveBudgetTest, TheGainScalesTheBudget) {
  // The fast server above at twice the gain (a served destination's, see
  // CopyPlan::budget_gain): twice the budget, still far below the limit.
  Outcome o = Simulate({0.0003, 3e9}, kMiB, 12 * kMiB, 2.0, 0, 2 * AdaptiveBudget::kGain);
  EXPECT_GE(o.min_budget_late, 4 * kMiB);
  EXPECT_LE(o.max_budget_late, 6 * kMiB);
  EXPECT_GT(o.throughput, 0.9 * 3e9);
}

TEST(AdaptiveBudgetTest, SlowServerGetsTheWholeLimit) {
  // 10 ms round trip, a server that could do 4 GB/s: the limit binds.
  Outcome o = Simulate({0.010, 4e9}, kMiB, 12 * kMiB, 3.0);
  EXPECT_EQ(o.min_budget_late, 12 * kMiB);
  EXPECT_GT(o.throughput, 0.9 * 12 * kMiB / 0.010);
}

TEST(AdaptiveBudgetTest, MiddleServerFindsItsBandwidthDelayProduct) {
  // 2 ms at 2 GB/s: 4 MB in the pipe; the budget settles near twice that.
  Outcome o = Simulate({0.002, 2e9}, kMiB, 64 * kMiB, 3.0);
  EXPECT_GE(o.min_budget_late, 4 * kMiB);
  EXPECT_LE(o.max_budget_late, 12 * kMiB);
  EXPECT_GT(o.throughput, 0.9 * 2e9);
}

TEST(AdaptiveBudgetTest, NoiseDoesNotMakeItWander) {
  // Service times stretched by up to 60 % at random.
  Outcome o = Simulate({0.0003, 3e9, 0.6}, kMiB, 12 * kMiB, 3.0);
  EXPECT_LE(o.max_budget_late, 4 * kMiB);
  EXPECT_GE(o.min_budget_late, kMiB);
}

TEST(AdaptiveBudgetTest, FastPipelinesGetSmallRequestsSlowOnesLarge) {
  Outcome fast = Simulate({0.0003, 3e9}, kMiB, 12 * kMiB, 2.0, 256 * 1024);
  EXPECT_EQ(fast.final_request, 256u * 1024);
  EXPECT_GT(fast.throughput, 0.9 * 3e9);
  Outcome slow = Simulate({0.010, 4e9}, kMiB, 12 * kMiB, 3.0, 256 * 1024);
  EXPECT_EQ(slow.final_request, kMiB);
  EXPECT_GT(slow.throughput, 0.9 * 12 * kMiB / 0.010);
}

TEST(AdaptiveBudgetTest, AServerSlowOnLargeRequestsGetsSmallOnes) {
  // Large requests cost it six times as much a byte (qemu-nbd reading qcow2
  // here): the trial's small window wins, and stays.
  Pipeline server{0.0003, 3e9};
  server.large_cost = 6;
  Outcome o = Simulate(server, kMiB, 12 * kMiB, 2.0, 256 * 1024);
  EXPECT_EQ(o.final_request, 256u * 1024);
  EXPECT_GT(o.throughput, 0.8 * 3e9);
  // Without the trial (min = max) large requests would stay: the product
  // of their own long round trips keeps them.
  Outcome fixed = Simulate(server, kMiB, 12 * kMiB, 2.0);
  EXPECT_LT(fixed.throughput, 0.3 * 3e9);
}

TEST(AdaptiveBudgetTest, AServerSlowOnSmallRequestsKeepsLargeOnes) {
  // Small requests cost it four times as much a byte (qemu-nbd writing a
  // new qcow2 image here): the trial keeps the largest requests.
  Pipeline server{0.0003, 3e9};
  server.small_cost = 4;
  Outcome o = Simulate(server, kMiB, 12 * kMiB, 2.0, 256 * 1024);
  EXPECT_EQ(o.final_request, kMiB);
  EXPECT_GT(o.throughput, 0.8 * 3e9);
}

TEST(AdaptiveBudgetTest, TheFirstProbeTimesBothSizesAndSlowPipelinesSkipTheTrial) {
  AdaptiveBudget fresh(256 * 1024, kMiB, 12 * kMiB);
  EXPECT_EQ(fresh.request_size(), 256u * 1024);
  EXPECT_EQ(fresh.budget(), 256u * 1024);  // one request alone
  // 10 ms round trips: windows of 40 ms, too long to try sizes in.
  FakeClock clock;
  AdaptiveBudget slow(256 * 1024, kMiB, 12 * kMiB, clock.now());
  const Clock::time_point t0{};
  using std::chrono::milliseconds;
  clock.time = t0 + milliseconds(10);
  slow.OnDone(256 * 1024, t0, true);
  clock.time = t0 + milliseconds(20);
  slow.OnDone(256 * 1024, t0 + milliseconds(10), true);
  // Then one of the largest, alone.
  EXPECT_TRUE(slow.probing());
  EXPECT_EQ(slow.request_size(), kMiB);
  EXPECT_EQ(slow.budget(), kMiB);
  clock.time = t0 + milliseconds(41);
  slow.OnDone(kMiB, t0 + milliseconds(20), true);
  EXPECT_FALSE(slow.probing());
  EXPECT_TRUE(slow.sizes_tried());
  EXPECT_EQ(slow.request_size(), kMiB);
  // The round trip of the requests it will send, not of the small ones.
  EXPECT_EQ(slow.round_trip(), milliseconds(21));
}

TEST(AdaptiveBudgetTest, ASlowPipelineSizesItsBudgetByTheLargeRequestsRoundTrip) {
  // 10 ms a request and 10 ms more a MiB, requests side by side (nbdkit's
  // delay filter: 1M reads took 21 ms, 256K ones 11.5): the product of the
  // small requests' round trip kept the budget at half of what it needed.
  Pipeline server{0.010, 3e9};
  server.delay_per_mib = 0.010;
  Outcome tried = Simulate(server, kMiB, 16 * kMiB, 0.5, 256 * 1024);
  Outcome fixed = Simulate(server, kMiB, 16 * kMiB, 0.5);
  EXPECT_EQ(tried.final_request, kMiB);
  EXPECT_GE(tried.min_budget_late, 12 * kMiB);
  EXPECT_GT(tried.throughput, 0.97 * fixed.throughput);
}

TEST(AdaptiveBudgetTest, BudgetStaysWithinItsBounds) {
  AdaptiveBudget small(kMiB, 256 * 1024);  // a limit below one request
  EXPECT_EQ(small.budget(), 256u * 1024);
  Outcome o = Simulate({0.050, 1e9}, kMiB, 3 * kMiB, 2.0);
  EXPECT_LE(o.max_budget_late, 3 * kMiB);
}

}  // namespace
}  // namespace nbdcopy
