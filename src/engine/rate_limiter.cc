#include "engine/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace nbdcopy {

RateLimiter::RateLimiter(uint64_t bytes_per_second, NowFunction now)
    : nanoseconds_per_byte_(1e9 / static_cast<double>(bytes_per_second)),
      now_(std::move(now)),
      next_(now_()) {}

Clock::duration RateLimiter::TryAcquire(uint64_t bytes) {
  MutexLock lock(mutex_);
  const Clock::time_point now = now_();
  // An idle stretch earns no credit: the cap holds right after it too.
  next_ = std::max(next_, now);
  if (next_ > now + kBurst) return next_ - (now + kBurst);
  next_ += std::chrono::nanoseconds(
      static_cast<int64_t>(static_cast<double>(bytes) * nanoseconds_per_byte_));
  return Clock::duration::zero();
}

void RateLimiter::Acquire(uint64_t bytes, const std::function<bool()>& stop) {
  for (;;) {
    Clock::duration wait = TryAcquire(bytes);
    if (wait == Clock::duration::zero() || stop()) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(wait, std::chrono::milliseconds(100)));
  }
}

}  // namespace nbdcopy
