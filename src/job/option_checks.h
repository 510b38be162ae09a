// The refusals of a job's options, in one place: what the command line
// alone decides (before any endpoint is opened, so nothing is created,
// waited for or written), and the few checks repeated on the opened
// endpoints. Every message starts with the option it refuses.
//
// One rule for every feature that reads or writes an image at offsets
// (--dirty-bitmap, --ranges, --checkpoint): "-", a FIFO, a socket and a
// character device are streams, refused before they are opened. The
// endpoints open all of them as streams (PipeEndpoint, sequential); a FIFO
// would first wait for its other end; and a character device is no image:
// /dev/null keeps nothing to resume or to write a change onto, a tty or a
// tape cannot be written at offsets. null: is no stream (an incremental
// copy's dry run); --checkpoint refuses it for keeping nothing.
// Thread safety: functions; they only stat() the operands.
#ifndef NBDCOPY_JOB_OPTION_CHECKS_H_
#define NBDCOPY_JOB_OPTION_CHECKS_H_

#include "endpoints/endpoint_spec.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

// The rule above for an operand: "-", or a path naming an existing FIFO,
// socket or character device. A missing path is no stream (yet).
bool NamesStream(const EndpointSpec& operand);

// The rule for an opened endpoint (for what changed since NamesStream).
bool IsStream(const Endpoint& endpoint);

// Everything about the command line that is refused before any endpoint
// is opened: options that need another (--ranges-type, --blkhash-file), a
// report or digest mixed into data on stdout, --verify of what cannot be
// read back, --salvage of a stream source, a file copied onto itself, an output file that is an
// operand or another output or cannot be written (job/output_files.h), and what an incremental copy
// cannot do (below). --checkpoint's come with FILE read (CheckpointJob::Load).
Status CheckOptions(const Options& options, const EndpointSpec& source,
                    const EndpointSpec& destination);

// REQUIRES options.dirty_bitmap or options.ranges. Refuses: both at once, a
// source that is not an NBD server (--dirty-bitmap) or a stream (--ranges),
// a stream destination, a local destination that does not exist,
// --destination-is-zero, --blkhash and --checksum.
Status CheckIncrementalOptions(const Options& options, const EndpointSpec& source,
                               const EndpointSpec& destination);

// REQUIRES options.checkpoint. Refuses a stream or null: destination and a
// stream source (called by CheckpointJob::Load, first).
Status CheckCheckpointOperands(const Options& options, const EndpointSpec& source,
                               const EndpointSpec& destination);

// After opening, nothing written: --verify of a destination that turned
// out to be a stream, and an incremental copy's (--checkpoint checks its
// own in CheckpointJob::Check).
Status CheckOpenedDestination(const Options& options, const Endpoint& destination);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_OPTION_CHECKS_H_
