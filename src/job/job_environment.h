// The environment variables a run reads: knobs for tests and measurements,
// not options (no command line spells them, the manual does not list
// them). ExecuteJob reads them once, at its start, and passes them down as
// plain values (OpenFlags::io_uring, the checkpointers' interval): the
// copy itself reads no environment.
#ifndef NBDCOPY_JOB_JOB_ENVIRONMENT_H_
#define NBDCOPY_JOB_JOB_ENVIRONMENT_H_

#include "base/clock.h"
#include "job/checkpoint_job.h"

namespace nbdcopy {

struct JobEnvironment {
  // NBDCOPY_IO_URING=0 (any value starting with 0): files and block
  // devices use plain system calls, never io_uring, whatever the other
  // endpoint: to compare the two, and to test a block device's buffered
  // path (copy-local-io-modes.sh, error-dst-block-full.sh,
  // error-dst-enospc-file.sh).
  bool io_uring = true;
  // NBDCOPY_CHECKPOINT_SECONDS=S (S > 0, fractions too): a timed checkpoint
  // every S seconds instead of every kCheckpointInterval, for --checkpoint
  // and for --retry's in-memory books; anything else keeps the default.
  // Tests make it short; bench/checkpoint_interval.sh measures its cost.
  Clock::duration checkpoint_interval = kCheckpointInterval;
};

// Reads the variables above from the environment.
JobEnvironment ReadJobEnvironment();

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_JOB_ENVIRONMENT_H_
