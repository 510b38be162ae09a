#include "job/job_environment.h"

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

TEST(JobEnvironmentTest, UnsetMeansTheDefaults) {
  ScopedVariable ring("NBDCOPY_IO_URING", nullptr);
  ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", nullptr);
  JobEnvironment environment = ReadJobEnvironment();
  EXPECT_TRUE(environment.io_uring);
  EXPECT_EQ(environment.checkpoint_interval, kCheckpointInterval);
}

TEST(JobEnvironmentTest, ZeroTurnsTheRingOffAndSecondsSetTheInterval) {
  ScopedVariable ring("NBDCOPY_IO_URING", "0");
  ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", "0.25");
  JobEnvironment environment = ReadJobEnvironment();
  EXPECT_FALSE(environment.io_uring);
  EXPECT_EQ(environment.checkpoint_interval, std::chrono::milliseconds(250));
}

TEST(JobEnvironmentTest, OtherValuesKeepTheDefaults) {
  for (const char* value : {"1", "", "yes"}) {
    ScopedVariable ring("NBDCOPY_IO_URING", value);
    EXPECT_TRUE(ReadJobEnvironment().io_uring) << value;
  }
  for (const char* value : {"0", "-3", "soon", ""}) {
    ScopedVariable seconds("NBDCOPY_CHECKPOINT_SECONDS", value);
    EXPECT_EQ(ReadJobEnvironment().checkpoint_interval, kCheckpointInterval) << value;
  }
}

}  // namespace
}  // namespace nbdcopy
