#include "engine/worker.h"

#include <fmt/format.h>
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
  books.StopCounting();
}

Status SharedCopy::first_error() {
  MutexLock lock(mutex_);
  return first_error_;
}

void SharedCopy::MergeStats(const CopyStats& worker) {
  MutexLock lock(mutex_);
  stats_.Merge(worker);
}

void SharedCopy::ConnectionFailed(unsigned number, const Status& why) {
  MutexLock lock(mutex_);
  stats_.failed_connections.push_back(
      fmt::format("connection {} of {} could not be opened (its work went to the others): {}",
                  number, plan.connections, why.message()));
}

CopyStats SharedCopy::stats() {
  MutexLock lock(mutex_);
  CopyStats stats = stats_;
  stats.map = map.stats();
  return stats;
}

Worker::Worker(SharedCopy& shared, Endpoint& source, Endpoint& destination,
               std::function<void()> on_first_data, bool opened_mid_copy)
    : on_first_data_(std::move(on_first_data)),
      shared_(shared),
      plan_(shared.plan),
      source_(source),
      destination_(destination),
      policy_(plan_, destination.info()),
      clone_(plan_.clone_data),
      // Without overlapped I/O on either side, a second request in flight
      // only reads ahead into colder buffers, unless the checksum keeps
      // them: then the next reads go on while it hashes (kMostKept).
      max_requests_(source.info().overlapped_io || destination.info().overlapped_io ||
                            shared.books.keeps_read_buffers()
                        ? plan_.requests
                        : 1),
      slots_(max_requests_),
      budget_(plan_.min_request_size, plan_.request_size, plan_.queue_size, Clock::now,
              plan_.budget_gain),
      books_(shared.books, destination, opened_mid_copy),
      // The budget bounds the bytes in flight (one request may exceed it
      // alone): the queue holds one request at least (CopyPlan).
      arena_(plan_.queue_size, max_requests_) {
  for (unsigned i = max_requests_; i > 0; --i) free_slots_.push_back(i - 1);
}

void Worker::Work() {
  std::vector<Completion> completions;
  for (;;) {
    KeepBooks(false);
    if (!Stopping()) Admit();
    bool no_more_work = Stopping() || (map_done_ && pieces_.empty());
    if (requests_in_flight_ == 0 && no_more_work) break;
    if (!Collect(&completions)) {
      WaitForEvents();
      Collect(&completions);
    }
  }
  // What the last completions showed is left in the map for another round.
  KeepBooks(true);
  stats_.final_budget = budget_.budget();
  stats_.final_request_size = budget_.request_size();
  shared_.MergeStats(stats_);
}

void Worker::KeepBooks(bool at_end) {
  bool again = false;
  Status status = at_end ? books_.AtEnd(destination_, shared_.map, Stopping(), &again)
                         : books_.Between(destination_, shared_.map, Stopping(), &again);
  if (!status.ok()) shared_.Fail(std::move(status));
  if (again) map_done_ = false;
}

bool Worker::Stopping() const { return shared_.failed() || CancelRequested(); }

void Worker::Admit() {
  while (requests_in_flight_ < max_requests_) {
    if (pieces_.empty()) {
      if (map_done_) return;
      map_done_ = !shared_.map.TakeBatch(source_, plan_.use_extents, plan_.batch_size, &pieces_);
      continue;
    }
    if (!pieces_.front().reads()) {
      Piece piece = pieces_.front();
      pieces_.pop_front();
      StartZeroPiece(piece);
      continue;
    }
    if (on_first_data_) std::exchange(on_first_data_, nullptr)();
    if (std::optional<CloneRule::Run> run = clone_.Next(pieces_)) {
      // Clones take no slot: check here what Work() checks between calls.
      if (Stopping()) return;
      if (CloneFront(*run)) continue;
    }
    if (!StartReadingPiece()) return;
  }
}

// Clones the run of data pieces at the front the clone rule chose, if the
// destination agrees; false leaves them to be copied.
bool Worker::CloneFront(const CloneRule::Run& run) {
  if (!clone_.Record(run, destination_.CloneRangeFrom(source_, run.offset, run.length))) {
    return false;
  }
  const PieceKind kind = pieces_.front().kind;
  pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<ptrdiff_t>(run.pieces));
  stats_.AddCloned(run.length);
  books_.Done(kind, run.offset, run.length, books_.Started(), 0);
  return true;
}

// Starts the read of (the first request's worth of) the front piece;
// false when the budget, the arena or the rate says to wait.
bool Worker::StartReadingPiece() {
  Piece piece = pieces_.front();
  piece.length = std::min(piece.length, budget_.request_size());
  // A request larger than the whole budget still runs, alone.
  if (bytes_in_flight_ > 0 && bytes_in_flight_ + piece.length > budget_.budget()) return false;
  // Read ahead of the checksum only so far; one buffer kept, of any size, always may.
  if (kept_bytes_ > 0 && kept_bytes_ + piece.length > kMostKept) return false;
  // Within the budget, yet the arena may be too fragmented: wait for buffers.
  std::byte* buffer = arena_.Take(piece.length);
  if (buffer == nullptr) return false;
  rate_wait_ = books_.ReadWait(piece.length);
  if (rate_wait_ != Clock::duration::zero()) {
    arena_.Give(buffer, piece.length);
    return false;
  }
  ConsumeFront(piece.length);
  unsigned index = TakeSlot(piece);
  Slot& slot = slots_[index];
  slot.alone = bytes_in_flight_ == 0;
  slot.started = budget_.Now();
  slot.buffer = buffer;
  slot.pending = 1;
  bytes_in_flight_ += piece.length;
  stats_.max_bytes_in_flight = std::max(stats_.max_bytes_in_flight, bytes_in_flight_);
  stats_.AddRead(piece.length);
  source_.StartRead(piece.offset, std::span(slot.buffer, piece.length), index);
  return true;
}

void Worker::ConsumeFront(uint64_t length) {
  Piece& front = pieces_.front();
  front.offset += length;
  front.length -= length;
  if (front.length == 0) pieces_.pop_front();
}

// A piece that reads nothing: zeroes (an operation or nothing), or zeroes
// for the checksum only.
void Worker::StartZeroPiece(const Piece& piece) {
  books_.Zeroes(piece);
  if (piece.kind == PieceKind::kHashAsZero) return;
  RunAction action = policy_.ForZeroPiece();
  stats_.AddRun(action, piece.length);
  if (action == RunAction::kSkip) {
    books_.Done(piece.kind, piece.offset, piece.length, books_.Started(), 0);
    return;
  }
  unsigned index = TakeSlot(piece);
  slots_[index].pending = 1;
  destination_.StartZero(piece.offset, piece.length, plan_.allocated, index);
}

unsigned Worker::TakeSlot(const Piece& piece) {
  unsigned index = free_slots_.back();
  free_slots_.pop_back();
  Slot& slot = slots_[index];
  slot.piece = piece;
  slot.ok = true;
  slot.kept = false;
  slot.epoch = books_.Started();
  ++requests_in_flight_;
  stats_.max_requests_in_flight = std::max(stats_.max_requests_in_flight, requests_in_flight_);
  return index;
}

// Takes finished operations; returns false if there were none.
bool Worker::Collect(std::vector<Completion>* completions) {
  completions->clear();
  source_.TakeCompletions(completions);
  size_t reads = completions->size();
  destination_.TakeCompletions(completions);
  size_t operations = completions->size();
  books_.TakeCompletions(completions);  // buffers the checksum is done with
  if (completions->empty()) return false;
  for (size_t i = 0; i < completions->size(); ++i) {
    Completion& completion = (*completions)[i];
    unsigned index = static_cast<unsigned>(completion.tag);
    if (i >= operations) {
      Slot& slot = slots_[index];
      slot.kept = false;
      kept_bytes_ -= slot.piece.length;
      if (slot.pending == 0) FreeSlot(index);  // its operations ended before
      continue;
    }
    if (!completion.status.ok() && i < reads && !Stopping()) {
      // (--salvage: the bytes that read, and zeroes; else the failure)
      Slot& slot = slots_[index];
      completion.status =
          books_.Rescue(source_, slot.piece, slot.piece.offset,
                        std::span(slot.buffer, slot.piece.length), std::move(completion.status));
    }
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
    std::span<const std::byte> data(slot.buffer, slot.piece.length);
    slot.kept = books_.ReadKept(slot.piece, slot.piece.offset, data, index);
    if (slot.kept) kept_bytes_ += slot.piece.length;
    if (slot.piece.kind == PieceKind::kHashOnly) {
      Release(index);
      return;
    }
    // Starting operations cannot fail here: their completions report.
    (void)policy_.ForEachRun(
        slot.piece.offset, data,
        [&](uint64_t offset, std::span<const std::byte> run, RunAction action) {
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
  const Piece& piece = slot.piece;
  if (slot.ok && piece.kind != PieceKind::kHashOnly) {
    books_.Done(piece.kind, piece.offset, piece.length, slot.epoch,
                slot.buffer != nullptr ? piece.length : 0);
  }
  if (slot.buffer != nullptr) {
    bytes_in_flight_ -= piece.length;
    budget_.OnDone(piece.length, slot.started, slot.alone);
  }
  // A buffer the checksum still reads stays out of the budget (what is in
  // flight), and in the arena (what memory holds) until it comes back.
  if (!slot.kept) FreeSlot(index);
}

void Worker::FreeSlot(unsigned index) {
  Slot& slot = slots_[index];
  if (slot.buffer != nullptr) {
    arena_.Give(slot.buffer, slot.piece.length);
    slot.buffer = nullptr;
  }
  --requests_in_flight_;
  free_slots_.push_back(index);
}

// Polls both endpoints' descriptors; the shortest of their timeouts bounds
// the wait, and a timeout is news too (an endpoint may give up).
void Worker::WaitForEvents() {
  pollfd fds[3];
  Endpoint* owners[3];
  nfds_t count = 0;
  int timeout_ms = -1;
  if (rate_wait_ != Clock::duration::zero()) {  // --rate: ask again then
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
  if (int fd = books_.poll_fd(); fd >= 0) {  // the checksum gives buffers back
    fds[count] = pollfd{fd, POLLIN, 0};
    owners[count++] = nullptr;
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
    if (owners[i] == nullptr) continue;  // the books': Collect takes them
    if (fds[i].revents != 0 || ready == 0) owners[i]->OnPollEvents(fds[i].revents);
  }
}

}  // namespace nbdcopy
