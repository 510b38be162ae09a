// The parallel copy engine: one worker thread per connection
// (engine/worker.h), all taking their work from one work map.
#ifndef NBDCOPY_ENGINE_PARALLEL_COPY_H_
#define NBDCOPY_ENGINE_PARALLEL_COPY_H_

#include "engine/checkpointer.h"
#include "engine/copy_stats.h"
#include "engine/progress_sink.h"
#include "hash/blkhash.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Copies the source to the destination with plan.connections workers.
// The first worker uses the endpoints given and starts at once; the others
// start when it first meets data, each opening its own connections
// (Connect()) in its own thread, so handshakes overlap with copying. A
// worker that cannot connect leaves the work to the others. With multi-conn
// one flush covers every connection's completed writes, so plan.flush
// flushes the given destination once, after every worker has finished. With
// blkhash, every block of the source is added to it (hashed in the workers,
// in parallel). Returns the first failure; all workers stop soon after it.
// Once CancelRequested(), workers admit nothing new, finish what is in
// flight, and CancelledStatus() is returned (no flush). *stats (optional)
// receives the statistics, even after a failure.
// REQUIRES the source has a known size, neither endpoint is sequential,
// plan.connections == 1 unless both can_multi_conn, the destination was
// prepared (PrepareDestination), and with blkhash plan.alignment is a
// multiple of its block size (MakeCopyPlan sees to both).
// checkpointer (optional): told of every range done; workers make
// checkpoints when it says one is due, and the end (success, failure or
// signal) is a last checkpoint, which is also the flush. Ranges a
// destination restart may have lost (--retry) are copied again, by further
// rounds if the workers had finished.
[[nodiscard]] Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                                  ProgressSink& progress, Blkhash* blkhash, CopyStats* stats,
                                  Checkpointer* checkpointer = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_PARALLEL_COPY_H_
