#include "engine/parallel_copy.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/adaptive_budget.h"
#include "engine/buffer_arena.h"
#include "nbdcopy/cancel.h"
#include "plan/work_map.h"
#include "base/zero_detect.h"

namespace nbdcopy {

namespace {

// Blkhash hashes whole blocks: no operation may split one.
PlanRules MapRules(const CopyPlan& plan, uint64_t size, const Blkhash* blkhash) {
  CopyPlan aligned = plan;
  if (blkhash != nullptr) aligned.alignment = std::max(plan.alignment, blkhash->block_size());
  return RulesFor(aligned, size);
}

// What every worker shares: the work map, the first failure, statistics.
class SharedState {
 public:
  SharedState(const CopyPlan& plan, uint64_t size, Blkhash* blkhash, Progress& progress)
      : plan(plan),
        size(size),
        blkhash(blkhash),
        progress(progress),
        map(MapRules(plan, size, blkhash), plan.skip_costly_maps) {}

  void Fail(Status status) {
    std::lock_guard lock(mutex_);
    if (failed_.load()) return;
    first_error_ = std::move(status);
    failed_.store(true);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status first_error() {
    std::lock_guard lock(mutex_);
    return first_error_;
  }
  void MergeStats(const CopyStats& worker) {
    std::lock_guard lock(mutex_);
    stats.max_bytes_in_flight = std::max(stats.max_bytes_in_flight, worker.max_bytes_in_flight);
    stats.max_requests_in_flight =
        std::max(stats.max_requests_in_flight, worker.max_requests_in_flight);
    stats.bytes_read += worker.bytes_read;
    stats.bytes_written += worker.bytes_written;
    stats.bytes_zeroed += worker.bytes_zeroed;
    stats.bytes_skipped += worker.bytes_skipped;
    stats.bytes_cloned += worker.bytes_cloned;
    stats.requests += worker.requests;
    stats.final_budget = std::max(stats.final_budget, worker.final_budget);
    stats.final_request_size = std::max(stats.final_request_size, worker.final_request_size);
    ++stats.workers;
  }

  const CopyPlan& plan;
  const uint64_t size;
  Blkhash* const blkhash;
  Progress& progress;
  WorkMap map;
  CopyStats stats;  // guarded by mutex_

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  Status first_error_;
};

class Worker {
 public:
  // on_first_data (optional) runs once, when this worker first meets data.
  Worker(SharedState& shared, Endpoint& source, Endpoint& destination,
         std::function<void()> on_first_data = nullptr)
      : on_first_data_(std::move(on_first_data)),
        shared_(shared),
        plan_(shared.plan),
        source_(source),
        destination_(destination),
        // Without overlapped I/O on either side, a second request in flight
        // only reads ahead into colder buffers.
        max_requests_(
            source.info().overlapped_io || destination.info().overlapped_io ? plan_.requests : 1),
        batch_size_(8 * plan_.request_size),
        slots_(max_requests_),
        budget_(plan_.min_request_size > 0 ? plan_.min_request_size : plan_.request_size,
                plan_.request_size, plan_.queue_size),
        // The budget bounds the bytes in flight; one request may exceed it alone.
        arena_(std::max(plan_.queue_size, plan_.request_size), max_requests_),
        detect_zeroes_(plan_.sparse_size > 0 && destination.info().efficient_zero),
        clone_(plan_.clone_data) {
    for (unsigned i = max_requests_; i > 0; --i) free_slots_.push_back(i - 1);
  }

  void Run() {
    std::vector<Completion> completions;
    for (;;) {
      if (!shared_.failed() && !CancelRequested()) Admit();
      bool no_more_work = shared_.failed() || CancelRequested() || (map_done_ && pieces_.empty());
      if (requests_in_flight_ == 0 && no_more_work) break;
      if (!Collect(&completions)) {
        WaitForEvents();
        Collect(&completions);
      }
    }
    stats_.final_budget = budget_.budget();
    stats_.final_request_size = budget_.request_size();
    shared_.MergeStats(stats_);
  }

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
  };

  void Admit() {
    while (requests_in_flight_ < max_requests_) {
      if (pieces_.empty()) {
        if (map_done_) return;
        map_done_ = !shared_.map.TakeBatch(source_, plan_.use_extents, batch_size_, &pieces_);
        continue;
      }
      if (on_first_data_ && !pieces_.front().zero) {
        std::exchange(on_first_data_, nullptr)();
      }
      if (clone_ && !pieces_.front().zero && pieces_.front().offset != refused_clone_at_) {
        // Clones take no slot: check here what Run() checks between calls.
        if (shared_.failed() || CancelRequested()) return;
        if (CloneFront()) continue;
      }
      Extent piece = pieces_.front();
      if (piece.zero) {
        pieces_.pop_front();
        StartZeroPiece(piece);
        continue;
      }
      piece.length = std::min(piece.length, budget_.request_size());
      // A request larger than the whole budget still runs, alone.
      if (bytes_in_flight_ > 0 && bytes_in_flight_ + piece.length > budget_.budget()) return;
      // Within the budget, yet the arena may be too fragmented: wait for buffers.
      std::byte* buffer = arena_.Take(piece.length);
      if (buffer == nullptr) return;
      ConsumeFront(piece.length);
      unsigned index = TakeSlot(piece);
      Slot& slot = slots_[index];
      slot.alone = bytes_in_flight_ == 0;
      slot.started = AdaptiveBudget::Clock::now();
      bytes_in_flight_ += piece.length;
      stats_.max_bytes_in_flight = std::max(stats_.max_bytes_in_flight, bytes_in_flight_);
      slot.buffer = buffer;
      stats_.bytes_read += piece.length;
      ++stats_.requests;
      slot.pending = 1;
      source_.StartRead(piece.offset, std::span(slot.buffer, piece.length), index);
    }
  }

  // Clones the contiguous data pieces at the front of pieces_ (at most
  // kMaxClone bytes) from the source; false when the endpoints cannot, and
  // the pieces are then copied (a refused range is not asked again). Never
  // cloning at all ends the attempts.
  bool CloneFront() {
    static constexpr uint64_t kMaxClone = 1ULL << 30;
    const uint64_t offset = pieces_.front().offset;
    uint64_t length = 0;
    size_t count = 0;
    for (const Extent& piece : pieces_) {
      if (piece.zero || piece.offset != offset + length || length + piece.length > kMaxClone) break;
      length += piece.length;
      ++count;
    }
    if (count == 0) return false;
    if (!destination_.CloneRangeFrom(source_, offset, length)) {
      if (stats_.bytes_cloned == 0) clone_ = false;
      refused_clone_at_ = offset;
      return false;
    }
    pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<ptrdiff_t>(count));
    stats_.AddCloned(length);
    shared_.progress.Add(length);
    return true;
  }

  void ConsumeFront(uint64_t length) {
    Extent& front = pieces_.front();
    front.offset += length;
    front.length -= length;
    if (front.length == 0) pieces_.pop_front();
  }

  void StartZeroPiece(const Extent& piece) {
    if (shared_.blkhash != nullptr) HashZeroes(piece.offset, piece.length);
    if (plan_.skip_zero_ranges) {
      stats_.bytes_skipped += piece.length;
      shared_.progress.Add(piece.length);
      return;
    }
    unsigned index = TakeSlot(piece);
    slots_[index].pending = 1;
    stats_.bytes_zeroed += piece.length;
    ++stats_.requests;
    destination_.StartZero(piece.offset, piece.length, plan_.allocated, index);
  }

  unsigned TakeSlot(const Extent& piece) {
    unsigned index = free_slots_.back();
    free_slots_.pop_back();
    slots_[index].offset = piece.offset;
    slots_[index].length = piece.length;
    ++requests_in_flight_;
    stats_.max_requests_in_flight = std::max(stats_.max_requests_in_flight, requests_in_flight_);
    return index;
  }

  // REQUIRES offset is block-aligned (the work map aligns zero extents).
  void HashZeroes(uint64_t offset, uint64_t length) {
    Blkhash& hash = *shared_.blkhash;
    const uint64_t block = hash.block_size();
    hash.AddZeroBlocks(offset / block, length / block);
    if (uint64_t tail = length % block; tail > 0) {  // the short last block
      std::vector<std::byte> zeroes(tail);
      hash.AddDigest((offset + length) / block, hash.BlockDigest(zeroes));
    }
  }

  // Takes finished operations; returns false if there were none.
  bool Collect(std::vector<Completion>* completions) {
    completions->clear();
    source_.TakeCompletions(completions);
    size_t reads = completions->size();
    destination_.TakeCompletions(completions);
    if (completions->empty()) return false;
    for (size_t i = 0; i < completions->size(); ++i) {
      Completion& completion = (*completions)[i];
      if (!completion.status.ok()) shared_.Fail(std::move(completion.status));
      unsigned index = static_cast<unsigned>(completion.tag);
      if (--slots_[index].pending > 0) continue;
      if (i < reads) {
        OnReadDone(index);
      } else {
        Release(index);
      }
    }
    return true;
  }

  void OnReadDone(unsigned index) {
    Slot& slot = slots_[index];
    if (!shared_.failed()) {
      std::span<const std::byte> data(slot.buffer, slot.length);
      if (shared_.blkhash != nullptr) {
        shared_.blkhash->AddData(slot.offset / shared_.blkhash->block_size(), data);
      }
      if (detect_zeroes_) {
        ForEachZeroRun(slot.offset, data, plan_.sparse_size,
                       [&](uint64_t offset, std::span<const std::byte> run, bool zero) {
                         StartWriteOrZero(index, offset, run, zero);
                         return Status::Ok();
                       });
      } else {
        StartWriteOrZero(index, slot.offset, data, false);
      }
    }
    if (slot.pending == 0) Release(index);
  }

  void StartWriteOrZero(unsigned index, uint64_t offset, std::span<const std::byte> run,
                        bool zero) {
    Slot& slot = slots_[index];
    if (zero && plan_.skip_zero_ranges) {
      stats_.bytes_skipped += run.size();
      return;
    }
    ++slot.pending;
    ++stats_.requests;
    if (zero) {
      stats_.bytes_zeroed += run.size();
      destination_.StartZero(offset, run.size(), plan_.allocated, index);
    } else {
      stats_.bytes_written += run.size();
      destination_.StartWrite(offset, run, index);
    }
  }

  void Release(unsigned index) {
    Slot& slot = slots_[index];
    if (!shared_.failed()) shared_.progress.Add(slot.length);
    if (slot.buffer != nullptr) {
      bytes_in_flight_ -= slot.length;
      budget_.OnDone(slot.length, slot.started, slot.alone, AdaptiveBudget::Clock::now());
      arena_.Give(slot.buffer, slot.length);
      slot.buffer = nullptr;
    }
    --requests_in_flight_;
    free_slots_.push_back(index);
  }

  void WaitForEvents() {
    pollfd fds[2];
    Endpoint* owners[2];
    nfds_t count = 0;
    int timeout_ms = -1;
    for (Endpoint* endpoint : {&source_, &destination_}) {
      PollInterest interest = endpoint->poll_interest();
      if (interest.fd < 0) continue;
      fds[count] = pollfd{interest.fd, interest.events, 0};
      owners[count++] = endpoint;
      if (interest.timeout_ms >= 0 && (timeout_ms < 0 || interest.timeout_ms < timeout_ms)) {
        timeout_ms = interest.timeout_ms;
      }
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
      // A timeout (ready == 0) is news too: an endpoint may give up.
      if (fds[i].revents != 0 || ready == 0) owners[i]->OnPollEvents(fds[i].revents);
    }
  }

  std::function<void()> on_first_data_;
  SharedState& shared_;
  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  const unsigned max_requests_;
  const uint64_t batch_size_;  // data bytes taken from the work map at a time
  std::vector<Slot> slots_;
  std::vector<unsigned> free_slots_;
  std::deque<Extent> pieces_;  // taken from the map, not yet started
  bool map_done_ = false;
  unsigned requests_in_flight_ = 0;
  uint64_t bytes_in_flight_ = 0;
  AdaptiveBudget budget_;
  BufferArena arena_;  // data pieces' buffers; a read fills each before anything looks
  const bool detect_zeroes_;
  bool clone_;                              // try CloneRangeFrom for data pieces
  uint64_t refused_clone_at_ = UINT64_MAX;  // where the last refused clone started
  CopyStats stats_;
};

}  // namespace

Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                    Progress& progress, Blkhash* blkhash, CopyStats* stats) {
  SharedState shared(plan, *source.info().size, blkhash, progress);
  {
    // Other workers start only once there is data to move: an image of
    // holes and zeroes is done by one connection before a second could
    // finish its handshake.
    std::vector<std::jthread> helpers;
    auto start_helpers = [&] {
      for (unsigned i = 1; i < plan.connections; ++i) {
        helpers.emplace_back([&shared, &source, &destination] {
          auto source_connection = source.Connect();
          if (!source_connection.ok()) return;
          auto destination_connection = destination.Connect();
          if (!destination_connection.ok()) return;
          Worker(shared, **source_connection, **destination_connection).Run();
        });
      }
    };
    Worker(shared, source, destination, start_helpers).Run();
  }  // joins the helpers
  if (stats != nullptr) {
    *stats = shared.stats;
    stats->map = shared.map.stats();
  }
  if (shared.failed()) return shared.first_error();
  if (CancelRequested()) return CancelledStatus();
  return plan.flush ? destination.Flush() : Status::Ok();
}

}  // namespace nbdcopy
