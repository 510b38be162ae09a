#include "engine/rate_limiter.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace nbdcopy {
namespace {

using namespace std::chrono_literals;
using fakes::FakeClock;

constexpr uint64_t kMiB = 1024 * 1024;

// Reads of `chunk` bytes as fast as the limiter allows for `seconds`:
// the bytes it let through.
uint64_t BytesIn(RateLimiter& limiter, FakeClock& clock, uint64_t chunk, Clock::duration span) {
  const Clock::time_point end = clock.time + span;
  uint64_t bytes = 0;
  while (clock.time < end) {
    Clock::duration wait = limiter.TryAcquire(chunk);
    if (wait == Clock::duration::zero()) {
      bytes += chunk;
    } else {
      clock.time += wait;
    }
  }
  return bytes;
}

TEST(RateLimiterTest, TenSecondsCarryTheRateWithinABurst) {
  FakeClock clock;
  RateLimiter limiter(100 * kMiB, clock.now());
  uint64_t bytes = BytesIn(limiter, clock, kMiB, 10s);
  // 1000 MiB, plus at most what kBurst (50 ms) and one request let ahead.
  EXPECT_GE(bytes, 1000 * kMiB);
  EXPECT_LE(bytes, 1000 * kMiB + 5 * kMiB + kMiB);
}

TEST(RateLimiterTest, ARefusalSaysHowLongToWaitAndReservesNothing) {
  FakeClock clock;
  RateLimiter limiter(kMiB, clock.now());  // 1 MiB/s: 64 KiB takes 62.5 ms
  EXPECT_EQ(limiter.TryAcquire(64 * 1024), Clock::duration::zero());
  // The next read is due at 62.5 ms and may start 50 ms early.
  Clock::duration wait = limiter.TryAcquire(64 * 1024);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::microseconds>(wait).count(), 12500);
  EXPECT_EQ(limiter.TryAcquire(64 * 1024), wait);  // nothing was reserved
  clock.time += wait;
  EXPECT_EQ(limiter.TryAcquire(64 * 1024), Clock::duration::zero());
  wait = limiter.TryAcquire(64 * 1024);  // then one every 62.5 ms
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::microseconds>(wait).count(), 62500);
}

TEST(RateLimiterTest, AnIdleStretchEarnsNoCredit) {
  FakeClock clock;
  RateLimiter limiter(kMiB, clock.now());
  clock.time += 60s;  // a minute of zero ranges, read from nowhere
  uint64_t bytes = BytesIn(limiter, clock, 64 * 1024, 1s);
  EXPECT_LE(bytes, kMiB + 64 * 1024 + kMiB / 20);  // one second's worth, not sixty
}

TEST(RateLimiterTest, AcquireStopsWaitingWhenAskedTo) {
  RateLimiter limiter(1);  // one byte a second
  EXPECT_EQ(limiter.TryAcquire(1000), Clock::duration::zero());
  const Clock::time_point start = Clock::now();
  limiter.Acquire(1, [] { return true; });  // would wait 1000 s
  EXPECT_LT(Clock::now() - start, 10s);
}

}  // namespace
}  // namespace nbdcopy
