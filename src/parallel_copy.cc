#include "nbdcopy/parallel_copy.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

#include "nbdcopy/zero_detect.h"

namespace nbdcopy {

namespace {

// Zero operations are issued in pieces so progress moves on huge holes and
// every length fits the protocol's 32-bit field.
constexpr uint64_t kZeroChunk = 1ULL << 30;

// State every worker sees. Only the cursor and the failure are shared
// while copying; both are touched once per range or once per copy.
class SharedState {
 public:
  SharedState(const CopyPlan& plan, uint64_t size, unsigned workers, Progress& progress)
      : plan(plan), size(size), range_size(RangeSize(plan, size, workers)), progress(progress) {}

  // Big enough that extents are asked for rarely, small enough that every
  // worker gets several ranges and they finish together.
  static uint64_t RangeSize(const CopyPlan& plan, uint64_t size, unsigned workers) {
    constexpr uint64_t kMaxRange = 32ULL << 20;
    uint64_t share = size / (8ULL * workers);
    share = (share + plan.request_size - 1) / plan.request_size * plan.request_size;
    return std::max(plan.request_size, std::min(kMaxRange, share));
  }

  // Returns the start of the next unclaimed range, or size when none is left.
  uint64_t ClaimRange() {
    uint64_t start = cursor_.fetch_add(range_size, std::memory_order_relaxed);
    return std::min(start, size);
  }
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
    ++stats.workers;
  }

  const CopyPlan& plan;
  const uint64_t size;
  const uint64_t range_size;
  Progress& progress;
  CopyStats stats;

 private:
  std::atomic<uint64_t> cursor_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  Status first_error_;
};

class Worker {
 public:
  Worker(SharedState& shared, Endpoint& source, Endpoint& destination)
      : shared_(shared),
        plan_(shared.plan),
        source_(source),
        destination_(destination),
        slots_(plan_.requests),
        detect_zeroes_(plan_.sparse_size > 0 && destination.info().efficient_zero) {
    for (unsigned i = plan_.requests; i > 0; --i) free_slots_.push_back(i - 1);
  }

  void Run() {
    std::vector<Completion> completions;
    for (;;) {
      if (!shared_.failed()) Admit();
      bool no_more_work = shared_.failed() || (ranges_done_ && pieces_.empty());
      if (requests_in_flight_ == 0 && no_more_work) break;
      if (!Collect(&completions)) {
        WaitForEvents();
        Collect(&completions);
      }
    }
    shared_.MergeStats(stats_);
  }

 private:
  // One request: a data piece (read, then writes and zeroes of its runs)
  // or a zero piece (one zero operation).
  struct Slot {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<std::byte>* buffer = nullptr;  // data pieces only
    unsigned pending = 0;                      // operations still running
  };

  void Admit() {
    while (requests_in_flight_ < plan_.requests) {
      if (pieces_.empty()) {
        if (ranges_done_) return;
        ClaimRange();
        continue;
      }
      Extent piece = pieces_.front();
      if (piece.zero && plan_.skip_zero_ranges) {
        pieces_.pop_front();
        stats_.bytes_skipped += piece.length;
        shared_.progress.Add(piece.length);
        continue;
      }
      // A request larger than the whole budget still runs, alone.
      if (!piece.zero && bytes_in_flight_ > 0 &&
          bytes_in_flight_ + piece.length > plan_.queue_size) {
        return;
      }
      pieces_.pop_front();
      unsigned index = free_slots_.back();
      free_slots_.pop_back();
      Slot& slot = slots_[index];
      slot.offset = piece.offset;
      slot.length = piece.length;
      slot.pending = 1;
      ++requests_in_flight_;
      stats_.max_requests_in_flight = std::max(stats_.max_requests_in_flight, requests_in_flight_);
      if (piece.zero) {
        stats_.bytes_zeroed += piece.length;
        destination_.StartZero(piece.offset, piece.length, plan_.allocated, index);
        continue;
      }
      bytes_in_flight_ += piece.length;
      stats_.max_bytes_in_flight = std::max(stats_.max_bytes_in_flight, bytes_in_flight_);
      slot.buffer = TakeBuffer();
      stats_.bytes_read += piece.length;
      source_.StartRead(piece.offset, std::span(slot.buffer->data(), piece.length), index);
    }
  }

  // Claims the next range and splits it into pieces by the source's extents.
  void ClaimRange() {
    uint64_t start = shared_.ClaimRange();
    uint64_t end = std::min(shared_.size, start + shared_.range_size);
    if (start >= end) {
      ranges_done_ = true;
      return;
    }
    for (uint64_t position = start; position < end;) {
      extents_.clear();
      if (plan_.use_extents) {
        Status status = source_.Extents(position, end - position, &extents_);
        // A failed or useless answer is not fatal: the rest is data.
        if (!status.ok() || extents_.empty() || extents_.front().offset != position) {
          extents_.assign(1, Extent{position, end - position, false});
        }
      } else {
        extents_.assign(1, Extent{position, end - position, false});
      }
      for (const Extent& extent : extents_) AddPieces(extent);
      position = extents_.back().offset + extents_.back().length;
    }
  }

  void AddPieces(const Extent& extent) {
    uint64_t piece_size = extent.zero ? kZeroChunk : plan_.request_size;
    for (uint64_t done = 0; done < extent.length;) {
      uint64_t n = std::min(piece_size, extent.length - done);
      pieces_.push_back(Extent{extent.offset + done, n, extent.zero});
      done += n;
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
      if (i < reads) {
        OnReadDone(static_cast<unsigned>(completion.tag));
      } else {
        OnOperationDone(static_cast<unsigned>(completion.tag));
      }
    }
    return true;
  }

  void OnReadDone(unsigned index) {
    Slot& slot = slots_[index];
    slot.pending = 0;
    if (!shared_.failed()) {
      std::span<const std::byte> data(slot.buffer->data(), slot.length);
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
    if (zero) {
      if (plan_.skip_zero_ranges) {
        stats_.bytes_skipped += run.size();
        return;
      }
      stats_.bytes_zeroed += run.size();
      ++slot.pending;
      destination_.StartZero(offset, run.size(), plan_.allocated, index);
      return;
    }
    stats_.bytes_written += run.size();
    ++slot.pending;
    destination_.StartWrite(offset, run, index);
  }

  void OnOperationDone(unsigned index) {
    if (--slots_[index].pending == 0) Release(index);
  }

  void Release(unsigned index) {
    Slot& slot = slots_[index];
    if (!shared_.failed()) shared_.progress.Add(slot.length);
    if (slot.buffer != nullptr) {
      bytes_in_flight_ -= slot.length;
      free_buffers_.push_back(slot.buffer);
      slot.buffer = nullptr;
    }
    --requests_in_flight_;
    free_slots_.push_back(index);
  }

  // Buffers are made on first need and reused: at most as many exist as
  // data requests were ever in flight at once.
  std::vector<std::byte>* TakeBuffer() {
    if (free_buffers_.empty()) {
      buffers_.emplace_back(plan_.request_size);
      free_buffers_.push_back(&buffers_.back());
    }
    std::vector<std::byte>* buffer = free_buffers_.back();
    free_buffers_.pop_back();
    return buffer;
  }

  void WaitForEvents() {
    Endpoint* endpoints[2] = {&source_, &destination_};
    pollfd fds[2];
    Endpoint* owners[2];
    nfds_t count = 0;
    for (Endpoint* endpoint : endpoints) {
      PollInterest interest = endpoint->poll_interest();
      if (interest.fd < 0) continue;
      fds[count] = pollfd{interest.fd, interest.events, 0};
      owners[count++] = endpoint;
    }
    if (count == 0) {
      // Nothing to wait on yet nothing finished: an endpoint lost track.
      shared_.Fail(Status::Error("internal error: requests in flight but nothing to wait on"));
      requests_in_flight_ = 0;
      return;
    }
    if (poll(fds, count, -1) == -1) {
      if (errno != EINTR) shared_.Fail(Status::FromErrno("poll", errno));
      return;
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents != 0) owners[i]->OnPollEvents(fds[i].revents);
    }
  }

  SharedState& shared_;
  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  std::vector<Slot> slots_;
  std::vector<unsigned> free_slots_;
  std::deque<std::vector<std::byte>> buffers_;  // deque: addresses stay put
  std::vector<std::vector<std::byte>*> free_buffers_;
  std::deque<Extent> pieces_;  // claimed, not yet started
  std::vector<Extent> extents_;
  bool ranges_done_ = false;
  unsigned requests_in_flight_ = 0;
  uint64_t bytes_in_flight_ = 0;
  const bool detect_zeroes_;
  CopyStats stats_;
};

}  // namespace

Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                    Progress& progress, CopyStats* stats) {
  SharedState shared(plan, *source.info().size, plan.connections, progress);
  {
    std::vector<std::jthread> helpers;
    for (unsigned i = 1; i < plan.connections; ++i) {
      helpers.emplace_back([&shared, &source, &destination] {
        auto source_connection = source.Connect();
        if (!source_connection.ok()) return;
        auto destination_connection = destination.Connect();
        if (!destination_connection.ok()) return;
        Worker(shared, **source_connection, **destination_connection).Run();
      });
    }
    Worker(shared, source, destination).Run();
  }  // joins the helpers
  if (stats != nullptr) *stats = shared.stats;
  if (shared.failed()) return shared.first_error();
  return plan.flush ? destination.Flush() : Status::Ok();
}

}  // namespace nbdcopy
