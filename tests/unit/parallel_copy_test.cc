#include "engine/parallel_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <random>

#include "job/progress.h"
#include "nbdcopy/cancel.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;
using fakes::Operation;

constexpr uint64_t kKiB = 1024;

// Random bytes with zero runs of random lengths and places.
std::vector<std::byte> MixedBytes(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size;) {
    size_t run = 1 + rng() % (96 * kKiB);
    bool zero = rng() % 3 == 0;
    for (size_t j = i; j < std::min(size, i + run); ++j) {
      bytes[j] = zero ? std::byte{0} : std::byte(1 + rng() % 255);
    }
    i += run;
  }
  return bytes;
}

CopyPlan Plan(unsigned requests, uint64_t request_size, uint64_t queue_size,
              uint64_t sparse_size = 4096) {
  CopyPlan plan;
  plan.synchronous = false;
  plan.requests = requests;
  plan.request_size = request_size;
  plan.queue_size = queue_size;
  plan.sparse_size = sparse_size;
  return plan;
}

// Source and destination whose completions are held back so operations
// overlap and finish out of order; the engine connects `workers` times.
struct Fixture {
  Fixture(std::vector<std::byte> bytes, size_t destination_size, unsigned workers,
          unsigned seed = 7)
      : workers(workers),
        source(std::move(bytes), "src"),
        destination(std::vector<std::byte>(destination_size, std::byte{0xee}), "dst") {
    source.DeferCompletions(seed);
    destination.DeferCompletions(seed + 1);
  }
  Status Copy(CopyPlan plan) {
    plan.connections = workers;
    FinishPlan(*source.info().size, &plan);
    Progress progress(ProgressMode::kNone, -1, source.info().size);
    CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
    return ParallelCopy(plan, source, destination, books, &stats);
  }
  std::vector<Operation> All(const std::string& op) { return destination.OpsNamed(op); }

  unsigned workers;
  MemoryEndpoint source;
  MemoryEndpoint destination;
  CopyStats stats;
};

struct Combination {
  unsigned workers;
  unsigned requests;
  uint64_t request_size;
  uint64_t queue_size;
  uint64_t sparse_size;
};

class ParallelCopyIdentityTest : public ::testing::TestWithParam<Combination> {};

TEST_P(ParallelCopyIdentityTest, EveryByteArrivesAndLimitsHold) {
  const Combination c = GetParam();
  for (unsigned seed : {1u, 2u, 3u}) {
    const size_t size = 3 * 1024 * kKiB + 777;  // not aligned to anything
    Fixture f(MixedBytes(size, seed), size, c.workers, seed);
    ASSERT_TRUE(f.Copy(Plan(c.requests, c.request_size, c.queue_size, c.sparse_size)).ok());
    ASSERT_EQ(f.destination.data(), f.source.data()) << "seed " << seed;
    EXPECT_LE(f.stats.max_requests_in_flight, c.requests);
    uint64_t budget = std::max(c.queue_size, c.request_size);
    EXPECT_LE(f.stats.max_bytes_in_flight, budget);
    EXPECT_LE(f.source.max_read_bytes_in_flight(), budget);
    EXPECT_EQ(f.stats.bytes_read, size);
    EXPECT_EQ(f.source.connections(), c.workers);
    EXPECT_EQ(f.destination.connections(), c.workers);
  }
}

INSTANTIATE_TEST_SUITE_P(Combinations, ParallelCopyIdentityTest,
                         ::testing::Values(Combination{1, 1, 4 * kKiB, 4 * kKiB, 4096},
                                           Combination{1, 64, 64 * kKiB, 256 * kKiB, 4096},
                                           Combination{2, 4, 64 * kKiB, 16 * 1024 * kKiB, 512},
                                           Combination{4, 64, 4 * kKiB, 64 * kKiB, 65536},
                                           Combination{4, 16, 256 * kKiB, 1024 * kKiB, 0},
                                           Combination{2, 64, 1024 * kKiB, 256 * kKiB,
                                                       4096}));  // queue < request

TEST(ParallelCopyTest, HelperConnectionsThatCannotConnectAreCountedAndNamed) {
  const size_t size = 2 * 1024 * kKiB;
  Fixture f(MixedBytes(size, 5), size, 3);
  f.destination.FailOn("connect");  // the first connection is made already
  ASSERT_TRUE(f.Copy(Plan(4, 64 * kKiB, 256 * kKiB)).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());  // the first did their work
  EXPECT_EQ(f.stats.workers, 1u);
  ASSERT_EQ(f.stats.failed_connections.size(), 2u);
  std::vector<std::string> lines = f.stats.failed_connections;
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines[0],
            "connection 2 of 3 could not be opened (its work went to the others): dst: cannot "
            "connect");
  EXPECT_EQ(lines[1],
            "connection 3 of 3 could not be opened (its work went to the others): dst: cannot "
            "connect");
}

TEST(ParallelCopyTest, RequestLargerThanQueueRunsAlone) {
  const size_t size = 4 * 1024 * kKiB;
  Fixture f(MixedBytes(size, 4), size, 1);
  ASSERT_TRUE(f.Copy(Plan(64, 1024 * kKiB, 64 * kKiB)).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_EQ(f.stats.max_bytes_in_flight, 1024 * kKiB);
  EXPECT_EQ(f.source.max_read_bytes_in_flight(), 1024 * kKiB);
}

TEST(ParallelCopyTest, ClonesDataWhereTheDestinationCanAndNeverReadsIt) {
  const size_t size = 8 * 1024 * kKiB;
  auto bytes = MixedBytes(size, 9);
  std::fill(bytes.begin() + 1024 * kKiB, bytes.begin() + 5 * 1024 * kKiB, std::byte{0});
  Fixture f(bytes, size, 2);
  f.source.AddZeroExtent(1024 * kKiB, 4 * 1024 * kKiB);
  f.destination.AllowClones();
  CopyPlan plan = Plan(8, 256 * kKiB, 1024 * kKiB);
  plan.clone_data = true;
  plan.skip_zero_ranges = false;
  ASSERT_TRUE(f.Copy(plan).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_TRUE(f.source.OpsNamed("read").empty());
  EXPECT_TRUE(f.All("write").empty());
  EXPECT_EQ(f.stats.bytes_cloned, size - 4 * 1024 * kKiB);
  EXPECT_EQ(f.stats.bytes_read, f.stats.bytes_cloned);
  for (const Operation& clone : f.All("clone")) {  // never over the hole
    EXPECT_TRUE(clone.offset + clone.length <= 1024 * kKiB || clone.offset >= 5 * 1024 * kKiB)
        << clone;
  }
}

TEST(ParallelCopyTest, ARefusedCloneEndsTheAttemptsAndTheDataIsCopied) {
  const size_t size = 8 * 1024 * kKiB;
  Fixture f(MixedBytes(size, 10), size, 2);
  CopyPlan plan = Plan(8, 256 * kKiB, 1024 * kKiB);
  plan.clone_data = true;
  ASSERT_TRUE(f.Copy(plan).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_EQ(f.stats.bytes_cloned, 0u);
  // One refusal per worker at most, then reads and writes.
  EXPECT_LE(f.All("clone").size(), 2u);
  EXPECT_GE(f.All("clone").size(), 1u);
  EXPECT_FALSE(f.source.OpsNamed("read").empty());
}

TEST(ParallelCopyTest, RangesRefusedAfterClonesAreCopiedOnceAndCounted) {
  const size_t size = 16 * 1024 * kKiB;
  Fixture f(MixedBytes(size, 12), size, 2);
  f.destination.AllowClones(9 * 1024 * kKiB, 10 * 1024 * kKiB);
  CopyPlan plan = Plan(8, 256 * kKiB, 1024 * kKiB, 0);  // no zero detection: every byte written
  plan.clone_data = true;
  plan.skip_zero_ranges = false;
  Progress progress(ProgressMode::kNone, -1, size);
  plan.connections = f.workers;
  FinishPlan(size, &plan);
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  ASSERT_TRUE(ParallelCopy(plan, f.source, f.destination, books, &f.stats).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_GT(f.stats.bytes_cloned, 0u);
  uint64_t written = 0;
  for (const Operation& write : f.All("write")) written += write.length;
  EXPECT_EQ(f.stats.bytes_cloned + written, size);  // each byte cloned or written, once
  EXPECT_EQ(progress.copied(), size);
}

// Asks for a cancel, as a signal would, when the first bytes are reported.
class CancelOnFirstProgress : public ProgressSink {
 public:
  void Add(uint64_t bytes) override { RequestCancel(SIGINT); }
};

TEST(ParallelCopyTest, NoCloneStartsOnceACancelWasAsked) {
  ResetCancelForTesting();
  const size_t size = 4 * 1024 * kKiB;
  auto bytes = MixedBytes(size, 13);
  std::fill(bytes.begin(), bytes.begin() + 1024 * kKiB, std::byte{0});
  Fixture f(bytes, size, 1);
  f.source.AddZeroExtent(0, 1024 * kKiB);  // skipped, reported at once: the cancel comes
  f.destination.AllowClones();
  CopyPlan plan = Plan(8, 256 * kKiB, 1024 * kKiB);
  plan.clone_data = true;
  plan.skip_zero_ranges = true;
  plan.connections = 1;
  FinishPlan(size, &plan);
  CancelOnFirstProgress progress;
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  Status status = ParallelCopy(plan, f.source, f.destination, books, &f.stats);
  ResetCancelForTesting();
  EXPECT_EQ(status.message(), "interrupted");
  EXPECT_TRUE(f.All("clone").empty()) << f.All("clone").size() << " clones after the cancel";
  EXPECT_EQ(f.stats.bytes_cloned, 0u);
}

TEST(ParallelCopyTest, NoCloneWithoutThePlan) {
  const size_t size = 2 * 1024 * kKiB;
  Fixture f(MixedBytes(size, 11), size, 2);
  f.destination.AllowClones();
  ASSERT_TRUE(f.Copy(Plan(8, 256 * kKiB, 1024 * kKiB)).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_TRUE(f.All("clone").empty());
}

TEST(ParallelCopyTest, ZeroExtentsBecomeZeroOperationsNotReads) {
  const size_t size = 8 * 1024 * kKiB;
  auto bytes = MixedBytes(size, 5);
  std::fill(bytes.begin() + 1024 * kKiB, bytes.begin() + 5 * 1024 * kKiB, std::byte{0});
  Fixture f(bytes, size, 2);
  f.source.AddZeroExtent(1024 * kKiB, 4 * 1024 * kKiB);
  ASSERT_TRUE(f.Copy(Plan(8, 256 * kKiB, 1024 * kKiB)).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
  EXPECT_EQ(f.stats.bytes_read, size - 4 * 1024 * kKiB);
  uint64_t hole_zeroed = 0;
  for (const Operation& zero : f.All("zero")) {
    if (zero.offset >= 1024 * kKiB && zero.offset + zero.length <= 5 * 1024 * kKiB) {
      hole_zeroed += zero.length;
    }
  }
  EXPECT_EQ(hole_zeroed, 4 * 1024 * kKiB);
  for (const Operation& write : f.All("write")) {
    EXPECT_TRUE(write.offset + write.length <= 1024 * kKiB || write.offset >= 5 * 1024 * kKiB)
        << write;
  }
}

TEST(ParallelCopyTest, SkipsZeroesOnAZeroDestinationAndAllocatesWhenAsked) {
  const size_t size = 2 * 1024 * kKiB;
  std::vector<std::byte> bytes(size);
  std::fill(bytes.begin(), bytes.begin() + 4096, std::byte{7});
  {
    Fixture f(bytes, size, 2);
    std::fill_n(f.destination.mutable_data().begin(), size, std::byte{0});
    CopyPlan plan = Plan(8, 64 * kKiB, 1024 * kKiB);
    plan.skip_zero_ranges = true;
    ASSERT_TRUE(f.Copy(plan).ok());
    EXPECT_EQ(f.destination.data(), bytes);
    EXPECT_TRUE(f.All("zero").empty());
    EXPECT_EQ(f.stats.bytes_skipped, size - 4096);
  }
  {
    // --allocated: the source's zero extent becomes allocated zeroes; a
    // read with data is written whole, its zero blocks included (libnbd's
    // shape); a read of nothing but zeroes becomes an allocated zero.
    Fixture f(bytes, size, 2);
    f.source.AddZeroExtent(1024 * kKiB, 1024 * kKiB);
    CopyPlan plan = Plan(8, 64 * kKiB, 1024 * kKiB);
    plan.allocated = true;
    ASSERT_TRUE(f.Copy(plan).ok());
    EXPECT_EQ(f.destination.data(), bytes);
    EXPECT_TRUE(f.All("zero").empty());
    uint64_t allocated_zeroes = 0, written = 0;
    const auto all_zero = [&](const Operation& op) {
      return std::all_of(bytes.begin() + op.offset, bytes.begin() + op.offset + op.length,
                         [](std::byte b) { return b == std::byte{0}; });
    };
    for (const Operation& zero : f.All("zero-alloc")) {
      EXPECT_TRUE(all_zero(zero)) << zero;
      allocated_zeroes += zero.length;
    }
    for (const Operation& write : f.All("write")) {
      EXPECT_FALSE(all_zero(write)) << write;
      written += write.length;
    }
    EXPECT_EQ(allocated_zeroes + written, size);
    const std::vector<Operation> writes = f.All("write");
    auto first = std::find_if(writes.begin(), writes.end(),
                              [](const Operation& write) { return write.offset == 0; });
    ASSERT_NE(first, writes.end());
    EXPECT_GT(first->length, 4096u);  // the zeroes after the data, written
  }
}

TEST(ParallelCopyTest, FailedExtentsAreData) {
  const size_t size = 1024 * kKiB;
  Fixture f(MixedBytes(size, 6), size, 2);
  f.source.AddZeroExtent(0, size);  // a lie, never acted on
  f.source.FailOn("extents");
  ASSERT_TRUE(f.Copy(Plan(8, 64 * kKiB, 1024 * kKiB)).ok());
  EXPECT_EQ(f.destination.data(), f.source.data());
}

TEST(ParallelCopyTest, FlushesOnceAfterEveryWrite) {
  const size_t size = 1024 * kKiB;
  Fixture f(MixedBytes(size, 8), size, 3);
  CopyPlan plan = Plan(4, 64 * kKiB, 1024 * kKiB);
  plan.flush = true;
  ASSERT_TRUE(f.Copy(plan).ok());
  auto log = f.destination.log();
  EXPECT_EQ(f.All("flush").size(), 1u);
  EXPECT_EQ(log.back(), (Operation{"flush", 0, 0}));
  // Without --flush, no flush.
  Fixture g(MixedBytes(size, 8), size, 3);
  ASSERT_TRUE(g.Copy(Plan(4, 64 * kKiB, 1024 * kKiB)).ok());
  EXPECT_TRUE(g.All("flush").empty());
}

class ParallelCopyErrorTest : public ::testing::TestWithParam<std::tuple<std::string, unsigned>> {};

TEST_P(ParallelCopyErrorTest, AnyFailureFailsTheCopy) {
  auto [op, workers] = GetParam();
  const size_t size = 2 * 1024 * kKiB;
  auto bytes = MixedBytes(size, 9);
  std::fill(bytes.begin(), bytes.begin() + 64 * kKiB, std::byte{0});  // something to zero
  Fixture f(bytes, size, workers);
  f.destination.FailOn(op);
  f.source.FailOn(op);
  CopyPlan plan = Plan(16, 64 * kKiB, 256 * kKiB);
  plan.flush = true;
  Status status = f.Copy(plan);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(op), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("Input/output error"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Operations, ParallelCopyErrorTest,
                         ::testing::Combine(::testing::Values("read", "write", "zero", "flush"),
                                            ::testing::Values(1u, 3u)));

}  // namespace
}  // namespace nbdcopy
