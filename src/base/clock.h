// The project's one clock, and the one way to replace it in a test.
// Everything that reads the time takes a NowFunction (default Clock::now);
// a test passes its fake (tests/support/fake_clock.h: a time it moves by
// hand). Durations, deadlines and rates are all Clock's.
#ifndef NBDCOPY_BASE_CLOCK_H_
#define NBDCOPY_BASE_CLOCK_H_

#include <chrono>
#include <functional>

namespace nbdcopy {

using Clock = std::chrono::steady_clock;  // monotonic: a wall-clock change moves nothing

// Where a reader of the time gets it: Clock::now, or a test's fake.
using NowFunction = std::function<Clock::time_point()>;

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_CLOCK_H_
