#include "engine/sync_copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "nbdcopy/cancel.h"
#include "plan/work_map.h"
#include "base/zero_detect.h"

namespace nbdcopy {

namespace {

class SyncCopier {
 public:
  SyncCopier(const CopyPlan& plan, Endpoint& source, Endpoint& destination, Progress& progress,
             SequentialBlkhash* blkhash, CopyStats* stats)
      : plan_(plan),
        source_(source),
        destination_(destination),
        progress_(progress),
        blkhash_(blkhash),
        stats_(stats != nullptr ? *stats : ignored_stats_),
        buffer_(plan.request_size),
        detect_zeroes_(plan.sparse_size > 0 && destination.info().efficient_zero),
        clone_(plan.clone_data) {}

  Status Run(uint64_t* copied) {
    Status status = source_.info().size ? CopySized(*source_.info().size) : CopyStream();
    if (copied != nullptr) *copied = copied_;
    if (status.ok() && plan_.flush) status = destination_.Flush();
    return status;
  }

 private:
  Status CopySized(uint64_t size) {
    WorkMap map(RulesFor(plan_, size), plan_.skip_costly_maps);
    std::deque<Extent> pieces;
    Status status;
    while (status.ok() &&
           map.TakeBatch(source_, plan_.use_extents, 8 * plan_.request_size, &pieces)) {
      for (; status.ok() && !pieces.empty(); pieces.pop_front()) {
        if (CancelRequested()) {
          status = CancelledStatus();  // the map's statistics still count
          break;
        }
        const Extent& piece = pieces.front();
        if (piece.zero) {
          status = ZeroRange(piece.offset, piece.length);
        } else if (!CloneData(piece.offset, piece.length)) {
          status = CopyData(piece.offset, piece.length);
        }
      }
    }
    stats_.map = map.stats();
    return status;
  }

  Status CopyStream() {
    for (;;) {
      if (CancelRequested()) return CancelledStatus();
      Result<size_t> got = source_.Read(copied_, buffer_);
      ++stats_.requests;
      if (!got.ok()) return got.status();
      if (*got == 0) return Status::Ok();
      stats_.bytes_read += *got;
      Status status = PadToDestinationBlock(copied_, *got);
      if (status.ok()) status = WriteData(copied_, std::span(buffer_.data(), *got), padded_);
      if (!status.ok()) return status;
    }
  }

  // The stream's last bytes may end inside a block of a destination that
  // takes only whole blocks: the rest of that block is read from the
  // destination and written back with them (padded_ is its length).
  // Earlier chunks are whole requests, so whole blocks.
  Status PadToDestinationBlock(uint64_t offset, size_t length) {
    padded_ = length;
    const EndpointInfo& info = destination_.info();
    const uint64_t block = info.min_block_size;
    const uint64_t end = offset + length;
    if (block <= 1 || info.partial_blocks_ok || end % block == 0 || !info.size ||
        end >= *info.size) {
      return Status::Ok();  // no rule, or the destination's own short tail
    }
    const uint64_t block_start = end - end % block;
    const uint64_t block_end = std::min(block_start + block, *info.size);
    if (block_end - offset > buffer_.size()) {  // the plan keeps requests whole blocks
      return Status::Error(
          fmt::format("{}: the stream's last block does not fit the buffer", destination_.name()));
    }
    std::vector<std::byte> old(block_end - block_start);
    Result<size_t> got = destination_.Read(block_start, old);
    if (!got.ok()) return got.status();
    padded_ = block_end - offset;
    std::copy(old.begin() + static_cast<ptrdiff_t>(end - block_start), old.end(),
              buffer_.begin() + static_cast<ptrdiff_t>(length));
    return Status::Ok();
  }

  // Shares the range's blocks with the source where the endpoints can
  // (Endpoint::CloneRangeFrom); never cloning at all ends the attempts.
  bool CloneData(uint64_t offset, uint64_t length) {
    if (!clone_) return false;
    if (!destination_.CloneRangeFrom(source_, offset, length)) {
      if (stats_.bytes_cloned == 0) clone_ = false;
      return false;
    }
    stats_.AddCloned(length);
    Done(length);
    return true;
  }

  Status CopyData(uint64_t offset, uint64_t length) {
    while (length > 0) {
      size_t n = std::min<uint64_t>(length, buffer_.size());
      Result<size_t> got = source_.Read(offset, std::span(buffer_.data(), n));
      ++stats_.requests;
      if (!got.ok()) return got.status();
      stats_.bytes_read += n;
      Status status = WriteData(offset, std::span(buffer_.data(), n), n);
      if (!status.ok()) return status;
      offset += n;
      length -= n;
    }
    return Status::Ok();
  }

  Status ZeroRange(uint64_t offset, uint64_t length) {
    if (blkhash_ != nullptr) blkhash_->Zeroes(length);
    if (!plan_.skip_zero_ranges) {
      Status status = CountedZero(offset, length);
      if (!status.ok()) return status;
    } else {
      stats_.bytes_skipped += length;
    }
    Done(length);
    return Status::Ok();
  }

  // Writes data read from offset, and what follows it in buffer_ up to
  // stored_length (the destination's bytes padding a last block); runs of
  // all-zero blocks become zero operations.
  Status WriteData(uint64_t offset, std::span<const std::byte> data, size_t stored_length) {
    if (blkhash_ != nullptr) blkhash_->Data(data);
    std::span<const std::byte> stored(data.data(), stored_length);
    Status status = !detect_zeroes_
                        ? CountedWrite(offset, stored)
                        : ForEachZeroRun(offset, stored, plan_.sparse_size,
                                         [this](uint64_t run_offset, std::span<const std::byte> run,
                                                bool zero) {
                                           if (!zero) return CountedWrite(run_offset, run);
                                           if (!plan_.skip_zero_ranges) {
                                             return CountedZero(run_offset, run.size());
                                           }
                                           stats_.bytes_skipped += run.size();
                                           return Status::Ok();
                                         });
    if (status.ok()) Done(data.size());
    return status;
  }

  Status CountedWrite(uint64_t offset, std::span<const std::byte> data) {
    ++stats_.requests;
    stats_.bytes_written += data.size();
    return destination_.Write(offset, data);
  }

  Status CountedZero(uint64_t offset, uint64_t length) {
    ++stats_.requests;
    stats_.bytes_zeroed += length;
    return destination_.Zero(offset, length, plan_.allocated);
  }

  void Done(uint64_t bytes) {
    copied_ += bytes;
    progress_.Add(bytes);
  }

  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  Progress& progress_;
  SequentialBlkhash* const blkhash_;
  CopyStats ignored_stats_;
  CopyStats& stats_;
  std::vector<std::byte> buffer_;
  const bool detect_zeroes_;
  bool clone_;  // try CloneRangeFrom for data pieces
  uint64_t copied_ = 0;
  size_t padded_ = 0;  // the chunk's length with its padding
};

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination, Progress& progress,
                SequentialBlkhash* blkhash, uint64_t* copied, CopyStats* stats) {
  if (stats != nullptr) stats->workers = 1;
  return SyncCopier(plan, source, destination, progress, blkhash, stats).Run(copied);
}

}  // namespace nbdcopy
