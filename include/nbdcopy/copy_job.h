// A job: one invocation of the tool, as the command line asks: open the
// endpoints (source first), check and prepare, copy with the right engine,
// hash the source (--blkhash, --checksum), read the destination back
// (--verify), report.
#ifndef NBDCOPY_COPY_JOB_H_
#define NBDCOPY_COPY_JOB_H_

#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

struct CopyOutcome {
  // OK, or the one-line error to print. After SIGINT/SIGTERM/SIGHUP:
  // "interrupted after copying N of M bytes" ("N bytes" for a stream).
  Status status;
  int exit_status = 0;  // 0, 1, 3 (digest mismatch), or 128 + signal (ExitStatusFor)
};

// REQUIRES options came from ParseCommandLine with Action::kCopy.
// -v output goes to stderr; the digests to stdout or their files.
// Cancellable (cancel.h); by the time it returns the progress bar's line is
// ended and every endpoint is closed ("[ CMD ]" servers reaped).
CopyOutcome ExecuteJob(const Options& options);

}  // namespace nbdcopy

#endif  // NBDCOPY_COPY_JOB_H_
