// One run of the tool as the command line asks: open the endpoints (source
// first), check and prepare, copy with the right engine, hash the source
// (--blkhash), read the destination back (--verify), report.
#ifndef NBDCOPY_COPY_JOB_H_
#define NBDCOPY_COPY_JOB_H_

#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// REQUIRES options came from ParseCommandLine with Action::kCopy.
// -v output goes to stderr; the digest to --blkhash-file or stdout.
Status RunCopy(const Options& options);

}  // namespace nbdcopy

#endif  // NBDCOPY_COPY_JOB_H_
