// One worker of the parallel engine and the state all workers share. A
// worker owns one source and one destination connection and runs its own
// poll(2) loop over both, so no lock is taken per request: it takes
// batches of pieces from the shared work map, admits them within its
// budget (--requests operations, an adaptive share of --queue-size data
// bytes in flight), and turns each finished read into writes and zero
// operations as the piece policy says.
#ifndef NBDCOPY_ENGINE_WORKER_H_
#define NBDCOPY_ENGINE_WORKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "engine/adaptive_budget.h"
#include "engine/buffer_arena.h"
#include "engine/checkpointer.h"
#include "engine/clone_rule.h"
#include "engine/copy_stats.h"
#include "engine/piece_policy.h"
#include "engine/progress_sink.h"
#include "engine/rate_limiter.h"
#include "hash/blkhash.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"
#include "plan/work_map.h"

namespace nbdcopy {

// What every worker shares: the plan, the work map, the first failure and
// the merged statistics. Thread safety: every member may be used from any
// worker thread.
class SharedCopy {
 public:
  // checkpointer: nullptr, or what records the done ranges (--checkpoint,
  // --retry).
  SharedCopy(const CopyPlan& plan, uint64_t size, Blkhash* blkhash, ProgressSink& progress,
             Checkpointer* checkpointer = nullptr)
      : plan(plan),
        blkhash(blkhash),
        progress(progress),
        checkpointer(checkpointer),
        map(RulesFor(plan, size), plan.skip_costly_maps, plan.skip_ranges.get()) {
    if (plan.rate > 0) rate.emplace(plan.rate);
  }

  // Keeps the first failure; every worker stops admitting work after it.
  void Fail(Status status) EXCLUDES(mutex_);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status first_error() EXCLUDES(mutex_);
  void MergeStats(const CopyStats& worker) EXCLUDES(mutex_);
  CopyStats stats() EXCLUDES(mutex_);

  const CopyPlan& plan;
  Blkhash* const blkhash;  // nullptr: not hashing
  ProgressSink& progress;
  Checkpointer* const checkpointer;  // nullptr: none; has its own lock
  WorkMap map;                       // has its own lock
  std::optional<RateLimiter> rate;  // --rate; has its own lock

 private:
  std::atomic<bool> failed_{false};
  Mutex mutex_;
  Status first_error_ GUARDED_BY(mutex_);
  CopyStats stats_ GUARDED_BY(mutex_);
};

class Worker {
 public:
  // on_first_data (optional) runs once, when this worker first meets data.
  // REQUIRES source and destination outlive the worker and belong to it.
  Worker(SharedCopy& shared, Endpoint& source, Endpoint& destination,
         std::function<void()> on_first_data = nullptr);

  // Copies until the map is done, a worker failed or a cancel was asked,
  // then waits for what is in flight and merges its statistics.
  void Run();

 private:
  // One request: a data piece (a read, then writes and zeroes of its runs)
  // or a zero piece (one zero operation).
  struct Slot {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::byte* buffer = nullptr;                // data pieces only; length bytes, from arena_
    unsigned pending = 0;                       // operations still running
    AdaptiveBudget::Clock::time_point started;  // data pieces: when the read started
    bool alone = false;  // data pieces: nothing else was in flight at the start
    bool ok = true;      // every operation so far succeeded (and was started)
    bool hash_only = false;  // a skipped range read for the checksum: no writes
    bool redo = false;       // copied again (--retry): not hashed, not counted
    uint64_t epoch = 0;      // the checkpointer's epoch at the start
  };

  bool Stopping() const;
  void Admit();
  bool CloneFront(const CloneRule::Run& run);
  bool StartDataPiece();
  void ConsumeFront(uint64_t length);
  void StartZeroPiece(const Extent& piece);
  unsigned TakeSlot(const Extent& piece);
  void HashZeroes(uint64_t offset, uint64_t length);
  bool Collect(std::vector<Completion>* completions);
  void OnReadDone(unsigned index);
  void StartRun(unsigned index, uint64_t offset, std::span<const std::byte> run, RunAction action);
  void Release(unsigned index);
  void WaitForEvents();
  void Checkpoint();
  void CopyAgain(const RangeSet& ranges);
  // A range done (every operation acknowledged) for the checkpointer,
  // gathered with its neighbours first; ReportDone tells what is gathered.
  // weight: as for Checkpointer::Completed.
  void Done(uint64_t offset, uint64_t length, uint64_t epoch, uint64_t weight);
  void ReportDone();

  std::function<void()> on_first_data_;
  SharedCopy& shared_;
  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  const PiecePolicy policy_;
  CloneRule clone_;
  const unsigned max_requests_;
  const uint64_t batch_size_;  // data bytes taken from the work map at a time
  std::vector<Slot> slots_;
  std::vector<unsigned> free_slots_;
  std::deque<Extent> pieces_;  // taken from the map, not yet started
  bool map_done_ = false;
  // --rate: how long before the cap lets the next read start (0: now).
  RateLimiter::Clock::duration rate_wait_{};
  unsigned requests_in_flight_ = 0;
  uint64_t bytes_in_flight_ = 0;
  AdaptiveBudget budget_;
  uint64_t destination_reconnections_;  // as last seen (--retry)
  static constexpr uint64_t kDoneBatch = 64ULL << 20;  // told at least every 64 MiB
  uint64_t done_offset_ = 0, done_length_ = 0, done_epoch_ = 0;  // gathered, not yet told
  uint64_t done_weight_ = 0;
  BufferArena arena_;  // data pieces' buffers; a read fills each before anything looks
  CopyStats stats_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_WORKER_H_
