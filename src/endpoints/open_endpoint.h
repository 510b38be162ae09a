// Turns an EndpointSpec into an open Endpoint of the right kind. The only
// place that knows which kinds exist.
#ifndef NBDCOPY_OPEN_ENDPOINT_H_
#define NBDCOPY_OPEN_ENDPOINT_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/file_system.h"  // kNewFileMode
#include "endpoints/endpoint_spec.h"
#include "endpoints/reconnect_notices.h"
#include "nbdcopy/endpoint.h"

namespace nbdcopy {

struct OpenFlags {
  bool debug = false;  // libnbd debug messages on stderr
  // Source: ask an NBD server for this dirty bitmap (NbdEndpoint::Connect).
  std::string dirty_bitmap;
  // Destination: a missing file is an error instead of being created.
  bool must_exist = false;
  unsigned timeout = 0;  // NBD: seconds a server may stay silent; 0: forever
  unsigned retry = 0;    // NBD by URI: attempts to re-establish a dropped connection
  std::shared_ptr<ReconnectNotices> notices;  // NBD: told of reconnects; may be null
  // Files and block devices: I/O through io_uring, so that a worker's poll
  // loop over an NBD connection never waits in a system call. Where the
  // other endpoint is local too there is nothing else to wait for, and the
  // plain calls in the workers' own threads cost less (see OverlapFileIo).
  bool overlapped_file_io = true;
  // false: files and block devices never use io_uring, plain system calls
  // only (NBDCOPY_IO_URING=0, which the job reads: job/job_environment.h).
  bool io_uring = true;
};

// Whether a file or block device copied to or from `other` overlaps its I/O
// (OpenFlags::overlapped_file_io): only beside an NBD server. Between local
// files, io_uring's kernel threads only add hand-overs and, on one
// destination file, spin on its inode lock. bench/ab.sh on 2026-12-05, the
// ring's wall over the plain calls', median of pairs: 1.03-1.09 into tmpfs,
// 1.14-1.22 into ext4, 1.22-1.27 from a sparse file; from qemu-nbd into
// tmpfs the other way round, the plain calls' 1.12 of the ring's.
bool OverlapFileIo(EndpointKind other);

// Opening a destination never writes to it: a missing regular file is
// created empty (unless flags.must_exist), an existing one keeps its
// contents until Truncate().
Result<std::unique_ptr<Endpoint>> OpenEndpoint(const EndpointSpec& spec, Role role,
                                               const OpenFlags& flags);

}  // namespace nbdcopy

#endif  // NBDCOPY_OPEN_ENDPOINT_H_
