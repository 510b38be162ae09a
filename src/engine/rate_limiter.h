// --rate: a cap on the bytes read from the source, shared by every worker.
// A token bucket in its virtual-time form: each read is scheduled at the
// time the cap allows it, and may start up to kBurst early, so the rate
// stays smooth (no stop-and-go per second) and is within a fraction of a
// request of the cap over any stretch longer than kBurst. Zero ranges that
// are not read cost nothing: only reads ask.
// Thread safety: every member may be called from any worker.
#ifndef NBDCOPY_ENGINE_RATE_LIMITER_H_
#define NBDCOPY_ENGINE_RATE_LIMITER_H_

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/clock.h"
#include "base/mutex.h"

namespace nbdcopy {

class RateLimiter {
 public:
  // How far ahead of its scheduled time a read may start.
  static constexpr Clock::duration kBurst = std::chrono::milliseconds(50);

  // REQUIRES bytes_per_second > 0.
  explicit RateLimiter(uint64_t bytes_per_second, NowFunction now = Clock::now);

  // Reserves `bytes` if they may be read now and returns zero; otherwise
  // reserves nothing and returns how long to wait before asking again.
  [[nodiscard]] Clock::duration TryAcquire(uint64_t bytes) EXCLUDES(mutex_);
  // Waits until `bytes` may be read, then reserves them; returns early,
  // reserving nothing, if stop() turns true (checked every 100 ms).
  void Acquire(uint64_t bytes, const std::function<bool()>& stop) EXCLUDES(mutex_);

 private:
  const double nanoseconds_per_byte_;
  const NowFunction now_;
  Mutex mutex_;
  // When the cap lets the next byte be read (the bucket's virtual time).
  Clock::time_point next_ GUARDED_BY(mutex_);
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_RATE_LIMITER_H_
