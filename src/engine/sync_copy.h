// The synchronous copy loop: one thread, one request at a time. Used with
// --synchronous and whenever an endpoint is a stream.
#ifndef NBDCOPY_SYNC_COPY_H_
#define NBDCOPY_SYNC_COPY_H_

#include <cstdint>

#include "hash/blkhash.h"
#include "plan/copy_plan.h"
#include "nbdcopy/endpoint.h"
#include "engine/parallel_copy.h"
#include "job/progress.h"

namespace nbdcopy {

// Copies every byte of source to destination following plan: zero extents
// and zero blocks in read data become Zero() (or nothing when
// plan.skip_zero_ranges), data becomes Write(). Flushes if plan.flush.
// With blkhash, the source's data is hashed into it in order.
// *copied (optional) receives the bytes copied: a stream's length.
// *stats (optional) receives the byte and request counts.
// Returns the first failure; the copy is then incomplete. Stops between
// requests once CancelRequested(), returning CancelledStatus().
// REQUIRES the destination was prepared (PrepareDestination).
Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                Progress& progress, SequentialBlkhash* blkhash = nullptr,
                uint64_t* copied = nullptr, CopyStats* stats = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_SYNC_COPY_H_
