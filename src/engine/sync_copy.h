// The synchronous copy engine: one thread, one request at a time. Used
// with --synchronous and whenever an endpoint is a stream.
#ifndef NBDCOPY_ENGINE_SYNC_COPY_H_
#define NBDCOPY_ENGINE_SYNC_COPY_H_

#include <cstdint>

#include "engine/copy_books.h"
#include "engine/copy_stats.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Copies every byte of source to destination following plan and the piece
// policy (engine/piece_policy.h); data pieces are cloned where the clone
// rule lets (engine/clone_rule.h). Every piece's bookkeeping (progress, the
// checksum, which `books` must take in image order, rate, checkpoints)
// goes through `books`, and the copy ends with its EndRound (the flush, or
// the last checkpoint); ranges a destination restart may have lost
// (--retry) are copied again. *copied (optional) receives the image's
// length: a stream's once it ended. *stats (optional) receives the byte and
// request counts. Returns the first failure; the copy is then incomplete.
// Stops between requests once CancelRequested(), returning
// CancelledStatus().
// REQUIRES the destination was prepared (PrepareDestination), and plan was
// finished for a sized source (FinishPlan; an internal error otherwise).
[[nodiscard]] Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                              CopyBooks& books, uint64_t* copied = nullptr,
                              CopyStats* stats = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_SYNC_COPY_H_
