#include "nbdcopy/cancel.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>

#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "job/progress.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kRequestSize = 64 * kKiB;

// A source that asks for a cancel while it serves its Nth read, the way a
// signal lands in the middle of a copy.
class CancellingSource : public MemoryEndpoint {
 public:
  CancellingSource(std::vector<std::byte> bytes, unsigned cancel_at_read)
      : MemoryEndpoint(std::move(bytes), "src"), cancel_at_read_(cancel_at_read) {}
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override {
    if (++reads_ == cancel_at_read_) RequestCancel(SIGTERM);
    return MemoryEndpoint::Read(offset, buffer);
  }

 private:
  const unsigned cancel_at_read_;
  unsigned reads_ = 0;
};

std::vector<std::byte> Pattern(size_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = std::byte(1 + i % 251);
  return bytes;
}

CopyPlan Plan(bool synchronous) {
  CopyPlan plan;
  plan.synchronous = synchronous;
  plan.connections = 1;
  plan.requests = 8;
  plan.request_size = kRequestSize;
  plan.queue_size = 8 * kRequestSize;
  plan.sparse_size = 0;
  plan.flush = true;
  return plan;
}

class CancelTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ResetCancelForTesting(); }
  void TearDown() override { ResetCancelForTesting(); }
};

// Both engines stop admitting work, finish what they started (every range
// read reaches the destination), skip the flush and say they were cancelled.
TEST_P(CancelTest, EngineStopsAndFinishesWhatItStarted) {
  const bool synchronous = GetParam();
  const size_t size = 64 * kRequestSize;
  CancellingSource source(Pattern(size), 5);
  source.DeferCompletions(3);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(size);
  destination.DeferCompletions(4);
  Progress progress(ProgressMode::kNone, -1, size);
  CopyStats stats;
  CopyPlan plan = Plan(synchronous);
  FinishPlan(size, &plan);
  CopyBooks books(plan, progress, nullptr, nullptr, nullptr);
  Status status = synchronous ? SyncCopy(plan, source, destination, books, nullptr, &stats)
                              : ParallelCopy(plan, source, destination, books, &stats);

  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "interrupted");
  EXPECT_EQ(ExitStatusFor(status), 128 + SIGTERM);
  std::vector<fakes::Operation> reads = source.OpsNamed("read");
  EXPECT_GE(reads.size(), 5u);
  EXPECT_LE(reads.size(), 5u + plan.requests);  // at most one window more in flight
  EXPECT_LT(progress.copied(), size);
  EXPECT_EQ(progress.copied(), stats.bytes_written);
  for (const fakes::Operation& read : reads) {
    EXPECT_EQ(std::memcmp(destination.data().data() + read.offset,
                          source.data().data() + read.offset, read.length),
              0)
        << "read at " << read.offset << " never written";
  }
  EXPECT_TRUE(destination.OpsNamed("flush").empty());
}

INSTANTIATE_TEST_SUITE_P(Engines, CancelTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Sync" : "Parallel"; });

TEST(CancelExitStatusTest, SuccessFailureAndSignals) {
  ResetCancelForTesting();
  EXPECT_EQ(ExitStatusFor(Status::Ok()), 0);
  EXPECT_EQ(ExitStatusFor(Status::Error("x")), 1);
  RequestCancel(SIGINT);
  RequestCancel(SIGHUP);  // the first request wins
  EXPECT_EQ(CancelSignal(), SIGINT);
  EXPECT_EQ(ExitStatusFor(Status::Error("x")), 130);
  EXPECT_EQ(ExitStatusFor(Status::Ok()), 0);  // a copy that finished anyway
  ResetCancelForTesting();
  RequestCancel(SIGHUP);
  EXPECT_EQ(ExitStatusFor(CancelledStatus()), 129);
  ResetCancelForTesting();
}

}  // namespace
}  // namespace nbdcopy
