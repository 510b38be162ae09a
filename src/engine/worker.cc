#include "engine/worker.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "nbdcopy/cancel.h"

namespace nbdcopy {

void SharedCopy::Fail(Status status) {
  MutexLock lock(mutex_);
  if (failed_.load()) return;
  first_error_ = std::move(status);
  failed_.store(true);
}

Status SharedCopy::first_error() {
  MutexLock lock(mutex_);
  return first_error_;
}

void SharedCopy::MergeStats(const CopyStats& worker) {
  MutexLock lock(mutex_);
  stats_.Merge(worker);
}

CopyStats SharedCopy::stats() {
  MutexLock lock(mutex_);
  CopyStats stats = stats_;
  stats.map = map.stats();
  return stats;
}

Worker::Worker(SharedCopy& shared, Endpoint& source, Endpoint& destination,
               std::function<void()> on_first_data)
    : on_first_data_(std::move(on_first_data)),
      shared_(shared),
      plan_(shared.plan),
      source_(source),
      destination_(destination),
      policy_(plan_, destination.info()),
      clone_(plan_.clone_data),
      // Without overlapped I/O on either side, a second request in flight
      // only reads ahead into colder buffers.
      max_requests_(source.info().overlapped_io || destination.info().overlapped_io ? plan_.requests
                                                                                    : 1),
      batch_size_(8 * plan_.request_size),
      slots_(max_requests_),
      budget_(plan_.min_request_size > 0 ? plan_.min_request_size : plan_.request_size,
              plan_.request_size, plan_.queue_size),
      // The budget bounds the bytes in flight; one request may exceed it alone.
      destination_reconnections_(destination.reconnections()),
      arena_(std::max(plan_.queue_size, plan_.request_size), max_requests_) {
  for (unsigned i = max_requests_; i > 0; --i) free_slots_.push_back(i - 1);
}

void Worker::Run() {
  std::vector<Completion> completions;
  for (;;) {
    if (shared_.checkpointer != nullptr) Checkpoint();
    if (!Stopping()) Admit();
    bool no_more_work = Stopping() || (map_done_ && pieces_.empty());
    if (requests_in_flight_ == 0 && no_more_work) break;
    if (!Collect(&completions)) {
      WaitForEvents();
      Collect(&completions);
    }
  }
  // What the last completions showed is left in the map for another round.
  if (shared_.checkpointer != nullptr) {
    ReportDone();
    Checkpoint();
  }
  stats_.final_budget = budget_.budget();
  stats_.final_request_size = budget_.request_size();
  shared_.MergeStats(stats_);
}

// Between requests: a checkpoint when one is due, and the ranges to copy
// again after this worker's destination connection was re-established.
void Worker::Checkpoint() {
  Checkpointer& checkpointer = *shared_.checkpointer;
  const bool due = !Stopping() && checkpointer.Due();
  if (due) ReportDone();  // so that the checkpoint includes it
  // A loss first: a flush after it must not vouch for what it lost.
  CopyAgain(checkpointer.ToCopyAgain(destination_, &destination_reconnections_));
  if (!due) return;
  Status status = checkpointer.Checkpoint(destination_);
  if (!status.ok()) shared_.Fail(std::move(status));
  // A loss the flush itself met.
  CopyAgain(checkpointer.ToCopyAgain(destination_, &destination_reconnections_));
}

void Worker::CopyAgain(const RangeSet& ranges) {
  if (ranges.empty()) return;
  shared_.map.Redo(ranges);
  map_done_ = false;
}

// Completions mostly arrive in order: a run of them is told to the
// checkpointer at once, not one lock per request.
void Worker::Done(uint64_t offset, uint64_t length, uint64_t epoch, uint64_t weight) {
  if (done_length_ > 0 && done_epoch_ == epoch && done_offset_ + done_length_ == offset &&
      done_length_ < kDoneBatch) {
    done_length_ += length;
    done_weight_ += weight;
    return;
  }
  ReportDone();
  done_offset_ = offset;
  done_length_ = length;
  done_epoch_ = epoch;
  done_weight_ = weight;
}

void Worker::ReportDone() {
  if (done_length_ == 0) return;
  shared_.checkpointer->Completed(done_offset_, done_length_, done_epoch_, done_weight_);
  done_length_ = 0;
}

bool Worker::Stopping() const { return shared_.failed() || CancelRequested(); }

void Worker::Admit() {
  while (requests_in_flight_ < max_requests_) {
    if (pieces_.empty()) {
      if (map_done_) return;
      map_done_ = !shared_.map.TakeBatch(source_, plan_.use_extents, batch_size_, &pieces_);
      continue;
    }
    if (pieces_.front().zero) {
      Extent piece = pieces_.front();
      pieces_.pop_front();
      StartZeroPiece(piece);
      continue;
    }
    if (on_first_data_) std::exchange(on_first_data_, nullptr)();
    if (std::optional<CloneRule::Run> run = clone_.Next(pieces_)) {
      // Clones take no slot: check here what Run() checks between calls.
      if (Stopping()) return;
      if (CloneFront(*run)) continue;
    }
    if (!StartDataPiece()) return;
  }
}

// Clones the run of data pieces at the front the clone rule chose, if the
// destination agrees; false leaves them to be copied.
bool Worker::CloneFront(const CloneRule::Run& run) {
  if (!clone_.Record(run, destination_.CloneRangeFrom(source_, run.offset, run.length))) {
    return false;
  }
  pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<ptrdiff_t>(run.pieces));
  stats_.AddCloned(run.length);
  shared_.progress.Add(run.length);
  if (shared_.checkpointer != nullptr) {
    Done(run.offset, run.length, shared_.checkpointer->epoch(), 0);
  }
  return true;
}

// Starts the read of (the first request's worth of) the front data piece;
// false when the budget or the arena says to wait for completions.
bool Worker::StartDataPiece() {
  Extent piece = pieces_.front();
  piece.length = std::min(piece.length, budget_.request_size());
  // A request larger than the whole budget still runs, alone.
  if (bytes_in_flight_ > 0 && bytes_in_flight_ + piece.length > budget_.budget()) return false;
  // Within the budget, yet the arena may be too fragmented: wait for buffers.
  std::byte* buffer = arena_.Take(piece.length);
  if (buffer == nullptr) return false;
  if (shared_.rate) {
    rate_wait_ = shared_.rate->TryAcquire(piece.length);
    if (rate_wait_ != RateLimiter::Clock::duration::zero()) {
      arena_.Give(buffer, piece.length);
      return false;
    }
  }
  ConsumeFront(piece.length);
  unsigned index = TakeSlot(piece);
  Slot& slot = slots_[index];
  slot.hash_only = piece.clean;
  slot.redo = piece.redo;
  slot.alone = bytes_in_flight_ == 0;
  slot.started = AdaptiveBudget::Clock::now();
  slot.buffer = buffer;
  slot.pending = 1;
  bytes_in_flight_ += piece.length;
  stats_.max_bytes_in_flight = std::max(stats_.max_bytes_in_flight, bytes_in_flight_);
  stats_.AddRead(piece.length);
  source_.StartRead(piece.offset, std::span(slot.buffer, piece.length), index);
  return true;
}

void Worker::ConsumeFront(uint64_t length) {
  Extent& front = pieces_.front();
  front.offset += length;
  front.length -= length;
  if (front.length == 0) pieces_.pop_front();
}

void Worker::StartZeroPiece(const Extent& piece) {
  if (shared_.blkhash != nullptr && !piece.redo) HashZeroes(piece.offset, piece.length);
  if (piece.clean) return;  // skipped, hashed only
  RunAction action = policy_.ForZeroPiece();
  stats_.AddRun(action, piece.length);
  if (action == RunAction::kSkip) {
    if (!piece.redo) shared_.progress.Add(piece.length);
    if (shared_.checkpointer != nullptr) {
      Done(piece.offset, piece.length, shared_.checkpointer->epoch(), 0);
    }
    return;
  }
  unsigned index = TakeSlot(piece);
  slots_[index].pending = 1;
  destination_.StartZero(piece.offset, piece.length, plan_.allocated, index);
}

unsigned Worker::TakeSlot(const Extent& piece) {
  unsigned index = free_slots_.back();
  free_slots_.pop_back();
  Slot& slot = slots_[index];
  slot.offset = piece.offset;
  slot.length = piece.length;
  slot.ok = true;
  slot.hash_only = false;
  slot.redo = piece.redo;
  slot.epoch = shared_.checkpointer != nullptr ? shared_.checkpointer->epoch() : 0;
  ++requests_in_flight_;
  stats_.max_requests_in_flight = std::max(stats_.max_requests_in_flight, requests_in_flight_);
  return index;
}

// REQUIRES offset is block-aligned (the plan's alignment covers the
// blkhash block, so the work map aligns zero pieces to it).
void Worker::HashZeroes(uint64_t offset, uint64_t length) {
  Blkhash& hash = *shared_.blkhash;
  const uint64_t block = hash.block_size();
  hash.AddZeroBlocks(offset / block, length / block);
  if (uint64_t tail = length % block; tail > 0) {  // the short last block
    std::vector<std::byte> zeroes(tail);
    hash.AddDigest((offset + length) / block, hash.BlockDigest(zeroes));
  }
}

// Takes finished operations; returns false if there were none.
bool Worker::Collect(std::vector<Completion>* completions) {
  completions->clear();
  source_.TakeCompletions(completions);
  size_t reads = completions->size();
  destination_.TakeCompletions(completions);
  if (completions->empty()) return false;
  for (size_t i = 0; i < completions->size(); ++i) {
    Completion& completion = (*completions)[i];
    unsigned index = static_cast<unsigned>(completion.tag);
    if (!completion.status.ok()) {
      slots_[index].ok = false;
      shared_.Fail(std::move(completion.status));
    }
    if (--slots_[index].pending > 0) continue;
    if (i < reads) {
      OnReadDone(index);
    } else {
      Release(index);
    }
  }
  return true;
}

void Worker::OnReadDone(unsigned index) {
  Slot& slot = slots_[index];
  if (shared_.failed()) slot.ok = false;  // its writes never start
  if (slot.ok) {
    std::span<const std::byte> data(slot.buffer, slot.length);
    if (shared_.blkhash != nullptr && !slot.redo) {
      shared_.blkhash->AddData(slot.offset / shared_.blkhash->block_size(), data);
    }
    if (slot.hash_only) {
      Release(index);
      return;
    }
    // Starting operations cannot fail here: their completions report.
    (void)policy_.ForEachRun(
        slot.offset, data, [&](uint64_t offset, std::span<const std::byte> run, RunAction action) {
          StartRun(index, offset, run, action);
          return Status::Ok();
        });
  }
  if (slot.pending == 0) Release(index);
}

void Worker::StartRun(unsigned index, uint64_t offset, std::span<const std::byte> run,
                      RunAction action) {
  stats_.AddRun(action, run.size());
  if (action == RunAction::kSkip) return;
  ++slots_[index].pending;
  if (action == RunAction::kZero) {
    destination_.StartZero(offset, run.size(), plan_.allocated, index);
  } else {
    destination_.StartWrite(offset, run, index);
  }
}

void Worker::Release(unsigned index) {
  Slot& slot = slots_[index];
  if (slot.ok && !slot.hash_only) {
    if (!slot.redo && !shared_.failed()) shared_.progress.Add(slot.length);
    if (shared_.checkpointer != nullptr) {
      Done(slot.offset, slot.length, slot.epoch, slot.buffer != nullptr ? slot.length : 0);
    }
  }
  if (slot.buffer != nullptr) {
    bytes_in_flight_ -= slot.length;
    budget_.OnDone(slot.length, slot.started, slot.alone, AdaptiveBudget::Clock::now());
    arena_.Give(slot.buffer, slot.length);
    slot.buffer = nullptr;
  }
  --requests_in_flight_;
  free_slots_.push_back(index);
}

// Polls both endpoints' descriptors; the shortest of their timeouts bounds
// the wait, and a timeout is news too (an endpoint may give up).
void Worker::WaitForEvents() {
  pollfd fds[2];
  Endpoint* owners[2];
  nfds_t count = 0;
  int timeout_ms = -1;
  if (rate_wait_ != RateLimiter::Clock::duration::zero()) {  // --rate: ask again then
    timeout_ms = static_cast<int>(
        std::chrono::ceil<std::chrono::milliseconds>(std::exchange(rate_wait_, {})).count());
  }
  for (Endpoint* endpoint : {&source_, &destination_}) {
    PollInterest interest = endpoint->poll_interest();
    if (interest.fd < 0) continue;
    fds[count] = pollfd{interest.fd, interest.events, 0};
    owners[count++] = endpoint;
    if (interest.timeout_ms >= 0 && (timeout_ms < 0 || interest.timeout_ms < timeout_ms)) {
      timeout_ms = interest.timeout_ms;
    }
  }
  if (count == 0 && timeout_ms >= 0 && requests_in_flight_ == 0) {
    poll(nullptr, 0, timeout_ms);  // only the cap to wait for
    return;
  }
  if (count == 0) {
    // Nothing to wait on yet nothing finished: an endpoint lost track.
    shared_.Fail(Status::Error("internal error: requests in flight but nothing to wait on"));
    requests_in_flight_ = 0;
    return;
  }
  int ready = poll(fds, count, timeout_ms);
  if (ready == -1) {
    if (errno != EINTR) shared_.Fail(Status::FromErrno("poll", errno));
    return;
  }
  for (nfds_t i = 0; i < count; ++i) {
    if (fds[i].revents != 0 || ready == 0) owners[i]->OnPollEvents(fds[i].revents);
  }
}

}  // namespace nbdcopy
