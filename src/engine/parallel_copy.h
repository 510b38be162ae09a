// The parallel copy engine: one worker thread per connection
// (engine/worker.h), all taking their work from one work map.
#ifndef NBDCOPY_ENGINE_PARALLEL_COPY_H_
#define NBDCOPY_ENGINE_PARALLEL_COPY_H_

#include "engine/copy_books.h"
#include "engine/copy_stats.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Copies the source to the destination with plan.connections workers.
// The first worker uses the endpoints given and starts at once; the others
// start when it first meets data, each opening its own connections
// (Connect()) in its own thread, so handshakes overlap with copying. A
// worker that cannot connect leaves the work to the others. Every piece's
// bookkeeping (progress, checksum, rate, checkpoints) goes through `books`;
// the round ends with its EndRound on the given destination (with
// multi-conn one flush covers every connection's completed writes), and
// ranges a destination restart may have lost (--retry) are copied by
// further rounds. Returns the first failure; all workers stop soon after
// it. Once CancelRequested(), workers admit nothing new, finish what is in
// flight, and CancelledStatus() is returned. *stats (optional) receives the
// statistics, even after a failure.
// REQUIRES the source has a known size and plan was finished for it
// (FinishPlan; an internal error otherwise), neither endpoint is sequential,
// plan.connections == 1 unless both can_multi_conn, the destination was
// prepared (PrepareDestination), and with a checksum plan.alignment is a
// multiple of its block size (MakeCopyPlan sees to both).
[[nodiscard]] Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                                  CopyBooks& books, CopyStats* stats = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_PARALLEL_COPY_H_
