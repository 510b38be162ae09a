// The parallel copy engine: one worker thread per connection. Each worker
// owns one source and one destination connection and runs its own poll(2)
// loop over both, so no lock is taken per request. Work is handed out in
// ranges from a shared cursor; within a worker, admission is gated by both
// --requests (operations in flight) and --queue-size (data bytes in
// flight; zero operations carry no payload and do not count).
#ifndef NBDCOPY_PARALLEL_COPY_H_
#define NBDCOPY_PARALLEL_COPY_H_

#include <cstdint>
#include <vector>

#include "hash/blkhash.h"
#include "plan/copy_plan.h"
#include "nbdcopy/endpoint.h"
#include "job/progress.h"
#include "plan/work_map.h"

namespace nbdcopy {

// What the workers did, for -v and for tests that check the limits held.
struct CopyStats {
  uint64_t max_bytes_in_flight = 0;     // largest data budget one worker used
  unsigned max_requests_in_flight = 0;  // most requests one worker had open
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_zeroed = 0;        // by zero operations
  uint64_t bytes_skipped = 0;       // zero ranges left alone (already zero)
  uint64_t bytes_cloned = 0;        // of those read and written: shared, not copied (reflink)
  unsigned workers = 0;             // workers that ran (connected)
  uint64_t requests = 0;            // operations started: reads, writes, zeroes
  uint64_t final_budget = 0;        // largest adaptive data budget in force at the end
  uint64_t final_request_size = 0;  // largest adaptive request size in force at the end
  WorkMap::Stats map;               // extents queries, and what was copied without one

  // A range shared with the source (Endpoint::CloneRangeFrom): read and
  // written as far as the destination can tell, in one request.
  void AddCloned(uint64_t bytes) {
    bytes_read += bytes;
    bytes_written += bytes;
    bytes_cloned += bytes;
    ++requests;
  }
};

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
// flight, and CancelledStatus() is returned (no flush).
// REQUIRES the source has a known size, neither endpoint is sequential,
// plan.connections == 1 unless both can_multi_conn, and the destination was
// prepared (PrepareDestination).
Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                    Progress& progress, Blkhash* blkhash, CopyStats* stats);

}  // namespace nbdcopy

#endif  // NBDCOPY_PARALLEL_COPY_H_
