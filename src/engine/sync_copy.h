// The synchronous copy engine: one thread, one request at a time. Used
// with --synchronous and whenever an endpoint is a stream.
#ifndef NBDCOPY_ENGINE_SYNC_COPY_H_
#define NBDCOPY_ENGINE_SYNC_COPY_H_

#include <cstdint>

#include "engine/checkpointer.h"
#include "engine/copy_stats.h"
#include "engine/progress_sink.h"
#include "hash/blkhash.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Copies every byte of source to destination following plan and the piece
// policy (engine/piece_policy.h); data pieces are cloned where the clone
// rule lets (engine/clone_rule.h). Flushes if plan.flush. With blkhash, the
// source's data is hashed into it in order. *copied (optional) receives
// the bytes copied: a stream's length. *stats (optional) receives the byte
// and request counts. Returns the first failure; the copy is then
// incomplete. Stops between requests once CancelRequested(), returning
// CancelledStatus().
// REQUIRES the destination was prepared (PrepareDestination).
// checkpointer (optional, sized sources only): as for ParallelCopy.
[[nodiscard]] Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                              ProgressSink& progress, SequentialBlkhash* blkhash = nullptr,
                              uint64_t* copied = nullptr, CopyStats* stats = nullptr,
                              Checkpointer* checkpointer = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_SYNC_COPY_H_
