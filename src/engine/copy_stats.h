// What an engine did, for -v, --json and the tests that check the limits
// held. Each worker counts its own, merged once at its end.
#ifndef NBDCOPY_ENGINE_COPY_STATS_H_
#define NBDCOPY_ENGINE_COPY_STATS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/work_map.h"

namespace nbdcopy {

// What becomes of a run of the image on the destination.
enum class RunAction {
  kWrite,  // its bytes are written
  kZero,   // one zero operation
  kSkip,   // nothing: the destination already reads as zeroes there
};

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
  // The helper connections (after the first) that could not be opened,
  // their work left to the others: one line each, "connection N of M
  // could not be opened (...): <why>".
  std::vector<std::string> failed_connections;

  void AddRead(uint64_t bytes) {
    bytes_read += bytes;
    ++requests;
  }
  // A run given to the destination as `action` says.
  void AddRun(RunAction action, uint64_t bytes) {
    switch (action) {
      case RunAction::kWrite:
        bytes_written += bytes;
        ++requests;
        return;
      case RunAction::kZero:
        bytes_zeroed += bytes;
        ++requests;
        return;
      case RunAction::kSkip:
        bytes_skipped += bytes;
        return;
    }
  }
  // A range shared with the source (Endpoint::CloneRangeFrom): read and
  // written as far as the destination can tell, in one request.
  void AddCloned(uint64_t bytes) {
    bytes_read += bytes;
    bytes_written += bytes;
    bytes_cloned += bytes;
    ++requests;
  }
  // Another worker's figures: sums, and the largest of the peaks.
  void Merge(const CopyStats& worker) {
    max_bytes_in_flight = std::max(max_bytes_in_flight, worker.max_bytes_in_flight);
    max_requests_in_flight = std::max(max_requests_in_flight, worker.max_requests_in_flight);
    bytes_read += worker.bytes_read;
    bytes_written += worker.bytes_written;
    bytes_zeroed += worker.bytes_zeroed;
    bytes_skipped += worker.bytes_skipped;
    bytes_cloned += worker.bytes_cloned;
    requests += worker.requests;
    final_budget = std::max(final_budget, worker.final_budget);
    final_request_size = std::max(final_request_size, worker.final_request_size);
    ++workers;
  }
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_COPY_STATS_H_
