// Which ranges of the destination are done, and which of them are known
// durable (--checkpoint, --retry). The engines report each range whose
// every write and zero the destination acknowledged; now and then (every
// `interval`, or after `interval_bytes` more were done) a worker flushes
// the destination and the ranges done before the flush become durable,
// which `persist` records (the job writes the checkpoint file).
//
// A flush covers every write whose reply arrived before it was sent, on
// any connection: NBD's multi-conn promise (the engines use several
// connections only with it), fsync for files. So the ranges are taken
// before the flush starts, and only they become durable.
//
// Destination restarts (--retry): a server that restarted may have lost
// what it acknowledged and had not flushed. Every loss of a destination
// connection starts a new epoch; what was done since the last durable
// checkpoint, or was started in an earlier epoch and finishes later, is
// handed back to be copied again, and a checkpoint whose flush spans a
// loss makes nothing durable.
//
// Thread safety: every method may be called from any worker thread.
#ifndef NBDCOPY_ENGINE_CHECKPOINTER_H_
#define NBDCOPY_ENGINE_CHECKPOINTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/range_set.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

class Checkpointer {
 public:
  // Records the durable ranges; called with a new, larger set each time,
  // one call at a time. An empty function records nothing (--retry alone).
  using Persist = std::function<Status(const RangeSet& durable)>;

  // durable: what an earlier run made durable (a resumed copy's). now: the
  // clock that says when `interval` has passed.
  Checkpointer(RangeSet durable, Persist persist, Clock::duration interval,
               uint64_t interval_bytes, NowFunction now = Clock::now);

  // The current epoch: a worker notes it when it starts a piece.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // [offset, offset + length) reached the destination: every operation on
  // it was acknowledged (or it needed none). started_epoch: epoch() when
  // its first operation started; a range started before a destination loss
  // is not trusted and goes to the redo set instead.
  // weight: the bytes of it that count toward interval_bytes, what a crash
  // would cost to copy again (data written; zeroes and skipped ranges are
  // cheap to redo: 0).
  void Completed(uint64_t offset, uint64_t length, uint64_t started_epoch, uint64_t weight)
      EXCLUDES(mutex_);
  void Completed(uint64_t offset, uint64_t length, uint64_t started_epoch) EXCLUDES(mutex_) {
    Completed(offset, length, started_epoch, length);
  }

  // Whether a checkpoint is due. Cheap: a worker asks between requests.
  bool Due() const;

  // Flushes `destination` (the caller's own connection) and makes what was
  // done before the flush durable, then persists. One at a time: returns
  // OK at once while another is running. A failed flush or persist is the
  // copy's failure. If the destination reconnected during the flush
  // (Endpoint::reconnections() changed), nothing becomes durable: the
  // caller then reports the loss (DestinationLost).
  [[nodiscard]] Status Checkpoint(Endpoint& destination) EXCLUDES(mutex_, persist_mutex_);

  // A destination connection was lost (and re-established): a new epoch.
  // Returns what must be copied again: everything done and not yet durable.
  [[nodiscard]] RangeSet DestinationLost() EXCLUDES(mutex_);

  // Ranges that finished after a loss but started before it: to copy again.
  [[nodiscard]] RangeSet TakeRedo() EXCLUDES(mutex_);

  // What a caller owning `destination` must copy again now: TakeRedo(),
  // plus DestinationLost() if the connection was re-established since
  // *seen_reconnections (which is updated). Cheap when nothing happened.
  [[nodiscard]] RangeSet ToCopyAgain(const Endpoint& destination, uint64_t* seen_reconnections)
      EXCLUDES(mutex_);

  RangeSet durable() const EXCLUDES(mutex_);
  // Checkpoints made durable by this job (for -v and tests).
  uint64_t checkpoints() const { return checkpoints_.load(std::memory_order_relaxed); }

 private:
  const Persist persist_;
  const NowFunction now_;
  const Clock::duration interval_;
  const uint64_t interval_bytes_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> running_{false};  // a checkpoint is in progress
  std::atomic<uint64_t> done_since_{0};
  std::atomic<Clock::rep> next_due_;  // time_since_epoch of the next timed checkpoint
  std::atomic<uint64_t> checkpoints_{0};
  std::atomic<bool> has_redo_{false};  // redo_ is not empty: TakeRedo needs the lock
  Mutex persist_mutex_;                // held across persist_, so sets are recorded in order
  mutable Mutex mutex_;
  RangeSet durable_ GUARDED_BY(mutex_);
  RangeSet completed_ GUARDED_BY(mutex_);  // done, not yet durable
  RangeSet flushing_ GUARDED_BY(mutex_);   // done, covered by the flush in progress
  RangeSet redo_ GUARDED_BY(mutex_);
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_CHECKPOINTER_H_
