// One worker of the parallel engine and the state all workers share. A
// worker owns one source and one destination connection and runs its own
// poll(2) loop over both, so no lock is taken per request: it takes
// batches of pieces from the shared work map, admits them within its
// budget (--requests operations, an adaptive share of --queue-size data
// bytes in flight), and turns each finished read into writes and zero
// operations as the piece policy says. What the copy records besides
// (progress, checksum, rate, checkpoints, copying again) goes through its
// Bookkeeper (engine/copy_books.h).
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
#include "engine/clone_rule.h"
#include "engine/copy_books.h"
#include "engine/copy_stats.h"
#include "engine/piece_policy.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"
#include "plan/piece.h"
#include "plan/work_map.h"

namespace nbdcopy {

// What every worker shares: the plan, the books, the work map, the first
// failure and the merged statistics. Thread safety: every member may be
// used from any worker thread.
class SharedCopy {
 public:
  SharedCopy(const CopyPlan& plan, CopyBooks& books)
      : plan(plan), books(books), map(plan.rules, plan.skip_costly_maps, plan.coverage.get()) {}

  // Keeps the first failure; every worker stops admitting work after it.
  void Fail(Status status) EXCLUDES(mutex_);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status first_error() EXCLUDES(mutex_);
  void MergeStats(const CopyStats& worker) EXCLUDES(mutex_);
  // Helper connection `number` (of plan.connections) could not be opened.
  void ConnectionFailed(unsigned number, const Status& why) EXCLUDES(mutex_);
  CopyStats stats() EXCLUDES(mutex_);

  const CopyPlan& plan;
  CopyBooks& books;  // thread-safe
  WorkMap map;       // has its own lock

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
  // opened_mid_copy: its destination connection was opened after others
  // had written (see Bookkeeper).
  Worker(SharedCopy& shared, Endpoint& source, Endpoint& destination,
         std::function<void()> on_first_data = nullptr, bool opened_mid_copy = false);

  // Copies until the map is done, a worker failed or a cancel was asked,
  // then waits for what is in flight and merges its statistics.
  void Work();

 private:
  // One request: a data piece (a read, then writes and zeroes of its runs)
  // or a zero piece (one zero operation).
  struct Slot {
    Piece piece;                                // (the part this request covers)
    std::byte* buffer = nullptr;                // pieces that read; length bytes, from arena_
    unsigned pending = 0;                       // operations still running
    Clock::time_point started;  // pieces that read: when the read started (the budget's clock)
    bool alone = false;  // pieces that read: nothing else was in flight at the start
    bool ok = true;      // every operation so far succeeded (and was started)
    // The checksum holds the buffer (Bookkeeper::ReadKept) until it hands
    // the slot back; its operations may have ended (Release) before.
    bool kept = false;
    uint64_t epoch = 0;  // Bookkeeper::Started() at the start
  };

  bool Stopping() const;
  void Admit();
  bool CloneFront(const CloneRule::Run& run);
  bool StartReadingPiece();
  void ConsumeFront(uint64_t length);
  void StartZeroPiece(const Piece& piece);
  unsigned TakeSlot(const Piece& piece);
  bool Collect(std::vector<Completion>* completions);
  void OnReadDone(unsigned index);
  void StartRun(unsigned index, uint64_t offset, std::span<const std::byte> run, RunAction action);
  // The slot's operations ended: progress, done ranges and the budget;
  // then FreeSlot, unless the checksum still holds its buffer.
  void Release(unsigned index);
  // The buffer back to the arena, the slot free.
  void FreeSlot(unsigned index);
  void WaitForEvents();
  // Between requests, and at the end: the books' turn (checkpoints, ranges
  // to copy again).
  void KeepBooks(bool at_end);

  std::function<void()> on_first_data_;
  SharedCopy& shared_;
  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  const PiecePolicy policy_;
  CloneRule clone_;
  const unsigned max_requests_;
  std::vector<Slot> slots_;
  std::vector<unsigned> free_slots_;
  std::deque<Piece> pieces_;  // taken from the map, not yet started
  bool map_done_ = false;
  // --rate: how long before the cap lets the next read start (0: now).
  Clock::duration rate_wait_{};
  unsigned requests_in_flight_ = 0;
  uint64_t bytes_in_flight_ = 0;
  // Bytes of this worker's buffers the checksum holds (read, maybe written,
  // not hashed yet). They leave the budget when their operations end, so
  // that hashing does not shrink what the budget measures, and read ahead
  // of the checksum up to kMostKept: at 1.4 GB/s of sha256 that covers
  // reads 3 ms late (measured: 1 GiB from nbdkit into null: 0.9 s with 4 MiB,
  // 1.1-1.3 s with 2 MiB, the same with 8 MiB for 7 MiB more RSS).
  static constexpr uint64_t kMostKept = 4 << 20;
  uint64_t kept_bytes_ = 0;
  AdaptiveBudget budget_;
  Bookkeeper books_;
  BufferArena arena_;  // data pieces' buffers; a read fills each before anything looks
  CopyStats stats_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_WORKER_H_
