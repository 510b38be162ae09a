#include "engine/checkpointer.h"

#include <utility>

namespace nbdcopy {

Checkpointer::Checkpointer(RangeSet durable, Persist persist, Clock::duration interval,
                           uint64_t interval_bytes, NowFunction now)
    : persist_(std::move(persist)),
      now_(std::move(now)),
      interval_(interval),
      interval_bytes_(interval_bytes),
      next_due_((now_() + interval).time_since_epoch().count()),
      durable_(std::move(durable)) {}

void Checkpointer::Completed(uint64_t offset, uint64_t length, uint64_t started_epoch,
                             uint64_t weight) {
  MutexLock lock(mutex_);
  if (started_epoch != epoch()) {
    redo_.Add(offset, length);
    has_redo_.store(true, std::memory_order_release);
    return;
  }
  completed_.Add(offset, length);
  done_since_.fetch_add(weight, std::memory_order_relaxed);
}

bool Checkpointer::Due() const {
  if (running_.load(std::memory_order_relaxed)) return false;
  return done_since_.load(std::memory_order_relaxed) >= interval_bytes_ ||
         now_().time_since_epoch().count() >= next_due_.load(std::memory_order_relaxed);
}

Status Checkpointer::Checkpoint(Endpoint& destination) {
  if (running_.exchange(true)) return Status::Ok();
  uint64_t epoch_before;
  {
    MutexLock lock(mutex_);
    flushing_ = std::move(completed_);
    completed_.Clear();
    epoch_before = epoch();
  }
  done_since_.store(0, std::memory_order_relaxed);
  next_due_.store((now_() + interval_).time_since_epoch().count());
  const uint64_t reconnections = destination.reconnections();
  Status status = destination.Flush();
  RangeSet durable;
  bool made_durable = false;
  {
    MutexLock lock(mutex_);
    if (!status.ok() || destination.reconnections() != reconnections || epoch() != epoch_before) {
      // Not durable: back with the rest (a loss moves it all to redo).
      completed_.Add(flushing_);
    } else if (!flushing_.empty()) {
      durable_.Add(flushing_);
      durable = durable_;
      made_durable = true;
    }
    flushing_.Clear();
  }
  if (status.ok() && made_durable) {
    MutexLock lock(persist_mutex_);
    if (persist_) status = persist_(durable);
    if (status.ok()) checkpoints_.fetch_add(1, std::memory_order_relaxed);
  }
  running_.store(false);
  return status;
}

RangeSet Checkpointer::DestinationLost() {
  MutexLock lock(mutex_);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  RangeSet lost = std::move(completed_);
  completed_.Clear();
  lost.Add(flushing_);  // the flush in progress will make nothing durable
  flushing_.Clear();
  lost.Add(redo_);
  redo_.Clear();
  has_redo_.store(false, std::memory_order_release);
  return lost;
}

RangeSet Checkpointer::TakeRedo() {
  if (!has_redo_.load(std::memory_order_acquire)) return RangeSet();
  MutexLock lock(mutex_);
  has_redo_.store(false, std::memory_order_release);
  RangeSet redo = std::move(redo_);
  redo_.Clear();
  return redo;
}

RangeSet Checkpointer::ToCopyAgain(const Endpoint& destination, uint64_t* seen_reconnections) {
  RangeSet again = TakeRedo();
  if (uint64_t now = destination.reconnections(); now != *seen_reconnections) {
    *seen_reconnections = now;
    again.Add(DestinationLost());
  }
  return again;
}

RangeSet Checkpointer::durable() const {
  MutexLock lock(mutex_);
  return durable_;
}

}  // namespace nbdcopy
