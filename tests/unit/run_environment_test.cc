#include "job/run_environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>

namespace nbdcopy {
namespace {

// Sets (or, with nullptr, unsets) one variable for a test's lifetime.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(RunEnvironmentTest, UnsetMeansTheDefaults) {
  ScopedVariable ring("NBDCOPY_IO_URING", nullptr);
  ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", nullptr);
  RunEnvironment environment = ReadRunEnvironment();
  EXPECT_TRUE(environment.io_uring);
  EXPECT_EQ(environment.checkpoint_interval, kCheckpointInterval);
}

TEST(RunEnvironmentTest, ZeroTurnsTheRingOffAndSecondsSetTheInterval) {
  ScopedVariable ring("NBDCOPY_IO_URING", "0");
  ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", "0.25");
  RunEnvironment environment = ReadRunEnvironment();
  EXPECT_FALSE(environment.io_uring);
  EXPECT_EQ(environment.checkpoint_interval, std::chrono::milliseconds(250));
}

TEST(RunEnvironmentTest, OtherValuesKeepTheDefaults) {
  for (const char* value : {"1", "", "yes"}) {
    ScopedVariable ring("NBDCOPY_IO_URING", value);
    EXPECT_TRUE(ReadRunEnvironment().io_uring) << value;
  }
  for (const char* value : {"0", "-3", "soon", ""}) {
    ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", value);
    EXPECT_EQ(ReadRunEnvironment().checkpoint_interval, kCheckpointInterval) << value;
  }
}

}  // namespace
}  // namespace nbdcopy
