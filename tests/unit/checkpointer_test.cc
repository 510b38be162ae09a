#include "engine/checkpointer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "job/progress.h"
#include "support/fake_clock.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;
using fakes::Operation;
using Range = RangeSet::Range;

constexpr uint64_t kKiB = 1024;
constexpr auto kNever = std::chrono::hours(1);

// Records every set the checkpointer persists.
struct Recorder {
  std::vector<RangeSet> persisted;
  Checkpointer::Persist Function() {
    return [this](const RangeSet& durable) {
      persisted.push_back(durable);
      return Status::Ok();
    };
  }
};

TEST(CheckpointerTest, ACheckpointMakesWhatWasDoneDurableAfterTheFlush) {
  Recorder recorder;
  RangeSet earlier;
  earlier.Add(0, 100);
  Checkpointer checkpointer(earlier, recorder.Function(), kNever, 1000);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(4096);
  checkpointer.Completed(100, 50, checkpointer.epoch());
  checkpointer.Completed(300, 50, checkpointer.epoch());
  EXPECT_FALSE(checkpointer.Due());  // 100 of 1000 bytes, and never by time
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_EQ(destination.OpsNamed("flush").size(), 1u);
  ASSERT_EQ(recorder.persisted.size(), 1u);
  EXPECT_EQ(recorder.persisted[0].Runs(), (std::vector<Range>{{0, 150}, {300, 50}}));
  EXPECT_EQ(checkpointer.checkpoints(), 1u);
  // Nothing new: the flush still happens, nothing is persisted again.
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_EQ(recorder.persisted.size(), 1u);
}

TEST(CheckpointerTest, DueAfterIntervalBytes) {
  Checkpointer checkpointer(RangeSet(), nullptr, kNever, 1000);
  checkpointer.Completed(0, 999, checkpointer.epoch());
  EXPECT_FALSE(checkpointer.Due());
  checkpointer.Completed(999, 1, checkpointer.epoch());
  EXPECT_TRUE(checkpointer.Due());
}

TEST(CheckpointerTest, DueAfterTheIntervalFromTheLastCheckpoint) {
  fakes::FakeClock clock;
  Checkpointer checkpointer(RangeSet(), nullptr, std::chrono::seconds(5), 1ULL << 40,
                            clock.now());
  clock.time += std::chrono::milliseconds(4999);
  EXPECT_FALSE(checkpointer.Due());
  clock.time += std::chrono::milliseconds(1);
  EXPECT_TRUE(checkpointer.Due());
  auto destination = MemoryEndpoint::Zeroes(4096);
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_FALSE(checkpointer.Due());  // the next one 5 s after this one
  clock.time += std::chrono::seconds(5);
  EXPECT_TRUE(checkpointer.Due());
}

TEST(CheckpointerTest, AFailedFlushMakesNothingDurable) {
  Recorder recorder;
  Checkpointer checkpointer(RangeSet(), recorder.Function(), kNever, 1000);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(4096);
  destination.FailOn("flush");
  checkpointer.Completed(0, 100, checkpointer.epoch());
  Status status = checkpointer.Checkpoint(destination);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("flush"), std::string::npos) << status.message();
  EXPECT_TRUE(recorder.persisted.empty());
  EXPECT_TRUE(checkpointer.durable().empty());
}

TEST(CheckpointerTest, ALossHandsBackWhatWasNotDurableAndDistrustsOlderRequests) {
  Recorder recorder;
  Checkpointer checkpointer(RangeSet(), recorder.Function(), kNever, 1000);
  MemoryEndpoint destination = MemoryEndpoint::Zeroes(4096);
  checkpointer.Completed(0, 100, checkpointer.epoch());
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());  // [0, 100) durable
  const uint64_t before = checkpointer.epoch();
  checkpointer.Completed(100, 100, before);
  RangeSet lost = checkpointer.DestinationLost();
  EXPECT_EQ(lost.Runs(), (std::vector<Range>{{100, 100}}));
  EXPECT_NE(checkpointer.epoch(), before);
  // A request started before the loss and acknowledged after it.
  checkpointer.Completed(200, 100, before);
  EXPECT_EQ(checkpointer.TakeRedo().Runs(), (std::vector<Range>{{200, 100}}));
  EXPECT_TRUE(checkpointer.TakeRedo().empty());
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_EQ(checkpointer.durable().Runs(), (std::vector<Range>{{0, 100}}));
}

// A destination whose Flush finds the connection re-established (a server
// that restarted meanwhile): the flush proves nothing.
class ReconnectingOnFlush : public MemoryEndpoint {
 public:
  using MemoryEndpoint::MemoryEndpoint;
  Status Flush() override {
    ++reconnections_;
    return MemoryEndpoint::Flush();
  }
  uint64_t reconnections() const override { return reconnections_; }

 private:
  uint64_t reconnections_ = 0;
};

TEST(CheckpointerTest, AFlushSpanningAReconnectMakesNothingDurable) {
  Recorder recorder;
  Checkpointer checkpointer(RangeSet(), recorder.Function(), kNever, 1000);
  ReconnectingOnFlush destination(std::vector<std::byte>(4096));
  checkpointer.Completed(0, 100, checkpointer.epoch());
  ASSERT_TRUE(checkpointer.Checkpoint(destination).ok());
  EXPECT_TRUE(recorder.persisted.empty());
  EXPECT_TRUE(checkpointer.durable().empty());
  // The caller reports the loss: the range comes back to be copied again.
  EXPECT_EQ(checkpointer.DestinationLost().Runs(), (std::vector<Range>{{0, 100}}));
}

// A destination server that restarts after `writes_before_restart` writes:
// everything written since its last flush is lost (it goes back to what it
// held at that flush), then the connection is re-established.
class RestartingDestination : public MemoryEndpoint {
 public:
  RestartingDestination(size_t size, int writes_before_restart)
      : MemoryEndpoint(std::vector<std::byte>(size), "dst"),
        flushed_(size),
        writes_left_(writes_before_restart) {}
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    if (--writes_left_ == 0) {
      mutable_data() = flushed_;  // the restart: unflushed writes are gone
      ++reconnections_;
    }
    return MemoryEndpoint::Write(offset, data);
  }
  Status Flush() override {
    flushed_ = data();
    return MemoryEndpoint::Flush();
  }
  uint64_t reconnections() const override { return reconnections_; }

 private:
  std::vector<std::byte> flushed_;
  int writes_left_;
  uint64_t reconnections_ = 0;
};

std::vector<std::byte> RandomBytes(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = std::byte(1 + rng() % 255);
  return bytes;
}

CopyPlan SmallPlan(bool synchronous) {
  CopyPlan plan;
  plan.synchronous = synchronous;
  plan.requests = 8;
  plan.request_size = 64 * kKiB;
  plan.queue_size = 256 * kKiB;
  plan.connections = 1;
  return plan;
}

TEST(CheckpointerTest, ADestinationRestartLosesNothingInEitherEngine) {
  for (bool synchronous : {false, true}) {
    for (int restart_after : {1, 5, 17, 40}) {
      const size_t size = 3 * 1024 * kKiB;
      MemoryEndpoint source(RandomBytes(size, restart_after), "src");
      if (!synchronous) source.DeferCompletions(3);
      RestartingDestination destination(size, restart_after);
      // A checkpoint every 256 KiB, so some writes were flushed before.
      Checkpointer checkpointer(RangeSet(), nullptr, kNever, 256 * kKiB);
      Progress progress(ProgressMode::kNone, -1, size);
      CopyPlan plan = SmallPlan(synchronous);
      FinishPlan(size, &plan);
      CopyBooks books(plan, progress, nullptr, nullptr, &checkpointer);
      Status status = synchronous ? SyncCopy(plan, source, destination, books)
                                  : ParallelCopy(plan, source, destination, books);
      ASSERT_TRUE(status.ok()) << status.message();
      ASSERT_EQ(destination.reconnections(), 1u);
      EXPECT_EQ(destination.data(), source.data())
          << (synchronous ? "sync" : "parallel") << ", restart after " << restart_after;
      EXPECT_EQ(progress.copied(), size);  // copied again, not counted again
    }
  }
}

TEST(CheckpointerTest, AResumedCopyNeitherReadsNorWritesWhatIsDone) {
  for (bool synchronous : {false, true}) {
    const size_t size = 2 * 1024 * kKiB;
    MemoryEndpoint source(RandomBytes(size, 5), "src");
    MemoryEndpoint destination(std::vector<std::byte>(size), "dst");
    auto done = std::make_shared<RangeSet>();
    done->Add(0, 512 * kKiB);
    done->Add(1024 * kKiB, 256 * kKiB);
    // What an earlier run wrote there.
    std::copy_n(source.data().begin(), 512 * kKiB, destination.mutable_data().begin());
    std::copy_n(source.data().begin() + 1024 * kKiB, 256 * kKiB,
                destination.mutable_data().begin() + 1024 * kKiB);
    CopyPlan plan = SmallPlan(synchronous);
    auto coverage = std::make_shared<Coverage>();
    coverage->done = *done;
    plan.coverage = coverage;
    Recorder recorder;
    Checkpointer checkpointer(*done, recorder.Function(), kNever, 1ULL << 40);
    Progress progress(ProgressMode::kNone, -1, size);
    FinishPlan(size, &plan);
    CopyBooks books(plan, progress, nullptr, nullptr, &checkpointer);
    Status status = synchronous ? SyncCopy(plan, source, destination, books)
                                : ParallelCopy(plan, source, destination, books);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(destination.data(), source.data());
    for (const Operation& op : source.OpsNamed("read")) {
      EXPECT_EQ(done->BytesIn(op.offset, op.length), 0u) << op;
    }
    for (const Operation& op : destination.OpsNamed("write")) {
      EXPECT_EQ(done->BytesIn(op.offset, op.length), 0u) << op;
    }
    // The end is a last checkpoint: everything durable, recorded once.
    ASSERT_EQ(recorder.persisted.size(), 1u);
    EXPECT_EQ(recorder.persisted.back().Runs(), (std::vector<Range>{{0, size}}));
    EXPECT_EQ(progress.copied(), size - done->bytes());
  }
}

}  // namespace
}  // namespace nbdcopy
