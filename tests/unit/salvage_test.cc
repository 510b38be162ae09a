#include "engine/salvage.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <random>
#include <string>
#include <vector>

#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "job/progress.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

using fakes::MemoryEndpoint;

constexpr uint64_t kKiB = 1024;

std::vector<std::byte> RandomBytes(size_t size, unsigned seed = 3) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (auto& b : bytes) b = std::byte(1 + rng() % 255);  // never zero
  return bytes;
}

// The source's bytes with the lost ranges zeroed: what a rescue writes.
std::vector<std::byte> Rescued(std::vector<std::byte> bytes, const RangeSet& lost) {
  for (const RangeSet::Range& run : lost.Runs()) {
    std::fill_n(bytes.begin() + static_cast<ptrdiff_t>(run.offset), run.length, std::byte{0});
  }
  return bytes;
}

RangeSet Ranges(std::initializer_list<std::pair<uint64_t, uint64_t>> runs) {
  RangeSet set;
  for (const auto& [offset, length] : runs) set.Add(offset, length);
  return set;
}

struct Told {
  std::vector<std::string> lines;
  LostRanges::Notice notice() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
};

TEST(SalvageTest, OnlyMediaErrorsAreUnreadable) {
  for (int error : {EIO, ENODATA, EILSEQ, EBADMSG}) {
    EXPECT_TRUE(IsUnreadable(IoError("src", "read", 0, 512, error))) << error;
  }
  for (int error : {ENOSPC, ENOTCONN, ESHUTDOWN, ENXIO, EINVAL, ENOMEM, ETIMEDOUT, EPERM}) {
    EXPECT_FALSE(IsUnreadable(IoError("src", "read", 0, 512, error))) << error;
  }
  EXPECT_FALSE(IsUnreadable(Status::Error("src: read: Input/output error")));  // no errno known
  EXPECT_EQ(Status::FromErrno("x", EIO).WithPrefix("y").error_number(), EIO);
}

TEST(SalvageTest, NarrowsARequestToItsBadSectors) {
  const std::vector<std::byte> bytes = RandomBytes(64 * kKiB);
  MemoryEndpoint source(bytes, "src");
  source.FailReadsIn(5000, 1);          // sector 4608..5120
  source.FailReadsIn(40 * kKiB, 2048);  // four sectors
  Told told;
  LostRanges lost("src", bytes.size(), told.notice());
  std::vector<std::byte> buffer(bytes.size(), std::byte{0x55});
  ASSERT_TRUE(SalvageRead(source, 0, buffer, EIO, lost).ok());
  const RangeSet expected = Ranges({{4608, 512}, {40 * kKiB, 2048}});
  EXPECT_EQ(lost.ranges(), expected);
  EXPECT_EQ(buffer, Rescued(bytes, expected));
  EXPECT_EQ(told.lines, (std::vector<std::string>{
                            "src: unreadable: offset 4608 length 512: Input/output error",
                            "src: unreadable: offset 40960 length 2048: Input/output error"}));
  // Bisection: about 2 log2(128 sectors) reads per bad place, not 128.
  EXPECT_LE(lost.reads(), 2u * 2 * 7 + 2);
  EXPECT_EQ(lost.reads(), source.OpsNamed("read").size());
}

TEST(SalvageTest, NarrowsToTheSourcesMinimumBlockSize) {
  const std::vector<std::byte> bytes = RandomBytes(32 * kKiB);
  MemoryEndpoint source(bytes, "src");
  source.mutable_info().min_block_size = 4096;
  source.FailReadsIn(9000, 10);
  LostRanges lost("src", bytes.size(), nullptr);
  std::vector<std::byte> buffer(16 * kKiB);
  ASSERT_TRUE(SalvageRead(source, 0, buffer, EIO, lost).ok());
  EXPECT_EQ(lost.ranges(), Ranges({{8192, 4096}}));
  for (const fakes::Operation& read : source.OpsNamed("read")) {
    EXPECT_EQ(read.offset % 4096, 0u) << read;
    EXPECT_EQ(read.length % 4096, 0u) << read;
  }
}

TEST(SalvageTest, AFailureThatIsNotUnreadableStaysFatal) {
  const std::vector<std::byte> bytes = RandomBytes(8 * kKiB);
  MemoryEndpoint source(bytes, "src");
  source.FailReadsIn(0, 8 * kKiB, ENOTCONN);
  LostRanges lost("src", bytes.size(), nullptr);
  std::vector<std::byte> buffer(bytes.size());
  Status status = SalvageRead(source, 0, buffer, EIO, lost);
  EXPECT_EQ(status.message(),
            "src: read at offset 0 length 4096: " + std::string(strerror(ENOTCONN)));
  EXPECT_TRUE(lost.ranges().empty());
}

TEST(SalvageLostRangesTest, ABadAreaOverSeveralRequestsIsOneLine) {
  Told told;
  LostRanges lost("src", 1 << 20, told.notice());
  // Narrowed out of order by different workers: [64K, 192K) in three requests.
  lost.Add(128 * kKiB, 64 * kKiB, EIO, false, true);  // ends inside its request
  EXPECT_TRUE(told.lines.empty());
  lost.Add(64 * kKiB, 32 * kKiB, EIO, true, false);  // starts inside its request
  EXPECT_TRUE(told.lines.empty());
  lost.Add(96 * kKiB, 32 * kKiB, EIO, false, false);  // the whole request between
  EXPECT_EQ(told.lines, (std::vector<std::string>{
                            "src: unreadable: offset 65536 length 131072: Input/output error"}));
  lost.Add(512 * kKiB, 512, ENODATA, false, true);  // its neighbour is never read
  EXPECT_EQ(told.lines.size(), 1u);
  lost.Finish();
  ASSERT_EQ(told.lines.size(), 2u);
  EXPECT_EQ(told.lines[1],
            "src: unreadable: offset 524288 length 512: " + std::string(strerror(ENODATA)));
  EXPECT_EQ(lost.ranges(), Ranges({{64 * kKiB, 128 * kKiB}, {512 * kKiB, 512}}));
}

// Both engines: the copy is the source outside the bad ranges and zeroes
// inside, the ranges are exactly the bad ones, each told once.
struct EngineCase {
  bool synchronous;
  unsigned workers;
};

class SalvageEngineTest : public testing::TestWithParam<EngineCase> {
 protected:
  Status Copy(MemoryEndpoint& source, MemoryEndpoint& destination, LostRanges* lost) {
    CopyPlan plan;
    plan.synchronous = GetParam().synchronous;
    plan.connections = GetParam().workers;
    plan.requests = 4;
    plan.request_size = 64 * kKiB;
    plan.queue_size = 256 * kKiB;
    FinishPlan(*source.info().size, &plan);
    Progress progress(ProgressMode::kNone, -1, source.info().size);
    CopyBooks books(plan, progress, nullptr, nullptr, nullptr, nullptr, lost);
    return plan.synchronous ? SyncCopy(plan, source, destination, books)
                            : ParallelCopy(plan, source, destination, books);
  }
};

TEST_P(SalvageEngineTest, CopiesEveryReadableByte) {
  const std::vector<std::byte> bytes = RandomBytes(1024 * kKiB + 512);
  MemoryEndpoint source(bytes, "src");
  const RangeSet bad = Ranges({{0, 512},                   // the first sector
                               {100 * kKiB + 1536, 512},   // one sector inside a request
                               {192 * kKiB, 256 * kKiB},   // four requests whole
                               {640 * kKiB - 1024, 2048},  // across a request boundary
                               {1024 * kKiB, 512}});       // the last sector
  for (const RangeSet::Range& run : bad.Runs()) source.FailReadsIn(run.offset, run.length);
  if (!GetParam().synchronous) source.DeferCompletions(11);
  auto destination = MemoryEndpoint::Zeroes(bytes.size());
  Told told;
  LostRanges lost("src", bytes.size(), told.notice());
  ASSERT_TRUE(Copy(source, destination, &lost).ok());
  lost.Finish();
  EXPECT_EQ(lost.ranges(), bad);
  EXPECT_EQ(destination.data(), Rescued(bytes, bad));
  std::sort(told.lines.begin(), told.lines.end());  // (as strings)
  EXPECT_EQ(told.lines, (std::vector<std::string>{
                            "src: unreadable: offset 0 length 512: Input/output error",
                            "src: unreadable: offset 103936 length 512: Input/output error",
                            "src: unreadable: offset 1048576 length 512: Input/output error",
                            "src: unreadable: offset 196608 length 262144: Input/output error",
                            "src: unreadable: offset 654336 length 2048: Input/output error"}));
}

TEST_P(SalvageEngineTest, WithoutSalvageTheFirstBadSectorFailsTheCopy) {
  const std::vector<std::byte> bytes = RandomBytes(256 * kKiB);
  MemoryEndpoint source(bytes, "src");
  source.FailReadsIn(70 * kKiB, 512);
  auto destination = MemoryEndpoint::Zeroes(bytes.size());
  Status status = Copy(source, destination, nullptr);
  // (The parallel engine's request size adapts: the length is its choice.)
  EXPECT_TRUE(status.message().starts_with("src: read at offset ")) << status.message();
  EXPECT_TRUE(status.message().ends_with(": Input/output error")) << status.message();
}

TEST_P(SalvageEngineTest, AFailedWriteStaysFatal) {
  const std::vector<std::byte> bytes = RandomBytes(256 * kKiB);
  MemoryEndpoint source(bytes, "src");
  source.FailReadsIn(70 * kKiB, 512);
  auto destination = MemoryEndpoint::Zeroes(bytes.size());
  destination.FailOn("write");
  LostRanges lost("src", bytes.size(), nullptr);
  Status status = Copy(source, destination, &lost);
  EXPECT_NE(status.message().find("write at offset"), std::string::npos) << status.message();
}

INSTANTIATE_TEST_SUITE_P(Engines, SalvageEngineTest,
                         testing::Values(EngineCase{true, 1}, EngineCase{false, 1},
                                         EngineCase{false, 3}),
                         [](const auto& info) {
                           return info.param.synchronous
                                      ? std::string("Sync")
                                      : "Parallel" + std::to_string(info.param.workers);
                         });

}  // namespace
}  // namespace nbdcopy
