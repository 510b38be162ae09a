#include "job/job_environment.h"

#include <chrono>
#include <cstdlib>

namespace nbdcopy {

JobEnvironment ReadJobEnvironment() {
  JobEnvironment environment;
  if (const char* setting = std::getenv("NBDCOPY_IO_URING"); setting && *setting == '0') {
    environment.io_uring = false;
  }
  if (const char* text = std::getenv("NBDCOPY_CHECKPOINT_SECONDS")) {
    if (double seconds = std::strtod(text, nullptr); seconds > 0) {
      environment.checkpoint_interval =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    }
  }
  return environment;
}

}  // namespace nbdcopy
