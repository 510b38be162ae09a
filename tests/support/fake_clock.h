// A clock a test moves by hand, for whatever takes a NowFunction
// (base/clock.h): `time` is what it reads, an hour past the clock's epoch
// unless set (so that "an hour ago" still is a time).
#ifndef NBDCOPY_TESTS_SUPPORT_FAKE_CLOCK_H_
#define NBDCOPY_TESTS_SUPPORT_FAKE_CLOCK_H_

#include "base/clock.h"

namespace nbdcopy::fakes {

struct FakeClock {
  // REQUIRES the clock outlives what reads it.
  NowFunction now() {
    return [this] { return time; };
  }
  Clock::time_point time = Clock::time_point(std::chrono::hours(1));
};

}  // namespace nbdcopy::fakes

#endif  // NBDCOPY_TESTS_SUPPORT_FAKE_CLOCK_H_
