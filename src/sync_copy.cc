#include "nbdcopy/sync_copy.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "nbdcopy/work_map.h"
#include "nbdcopy/zero_detect.h"

namespace nbdcopy {

namespace {

class SyncCopier {
 public:
  SyncCopier(const CopyPlan& plan, Endpoint& source, Endpoint& destination, Progress& progress,
             SequentialBlkhash* blkhash)
      : plan_(plan),
        source_(source),
        destination_(destination),
        progress_(progress),
        blkhash_(blkhash),
        buffer_(plan.request_size),
        detect_zeroes_(plan.sparse_size > 0 && destination.info().efficient_zero) {}

  Status Run(uint64_t* copied) {
    Status status = source_.info().size ? CopySized(*source_.info().size) : CopyStream();
    if (copied != nullptr) *copied = copied_;
    if (status.ok() && plan_.flush) status = destination_.Flush();
    return status;
  }

 private:
  Status CopySized(uint64_t size) {
    WorkMap map(RulesFor(plan_, size));
    std::deque<Extent> pieces;
    while (map.TakeBatch(source_, plan_.use_extents, 8 * plan_.request_size, &pieces)) {
      for (; !pieces.empty(); pieces.pop_front()) {
        const Extent& piece = pieces.front();
        Status status = piece.zero ? ZeroRange(piece.offset, piece.length)
                                   : CopyData(piece.offset, piece.length);
        if (!status.ok()) return status;
      }
    }
    return Status::Ok();
  }

  Status CopyStream() {
    for (;;) {
      Result<size_t> got = source_.Read(copied_, buffer_);
      if (!got.ok()) return got.status();
      if (*got == 0) return Status::Ok();
      Status status = WriteData(copied_, std::span(buffer_.data(), *got));
      if (!status.ok()) return status;
    }
  }

  Status CopyData(uint64_t offset, uint64_t length) {
    while (length > 0) {
      size_t n = std::min<uint64_t>(length, buffer_.size());
      Result<size_t> got = source_.Read(offset, std::span(buffer_.data(), n));
      if (!got.ok()) return got.status();
      Status status = WriteData(offset, std::span(buffer_.data(), n));
      if (!status.ok()) return status;
      offset += n;
      length -= n;
    }
    return Status::Ok();
  }

  Status ZeroRange(uint64_t offset, uint64_t length) {
    if (blkhash_ != nullptr) blkhash_->Zeroes(length);
    if (!plan_.skip_zero_ranges) {
      Status status = destination_.Zero(offset, length, plan_.allocated);
      if (!status.ok()) return status;
    }
    Done(length);
    return Status::Ok();
  }

  // Writes data read from offset; runs of all-zero blocks become zero
  // operations.
  Status WriteData(uint64_t offset, std::span<const std::byte> data) {
    if (blkhash_ != nullptr) blkhash_->Data(data);
    Status status =
        !detect_zeroes_
            ? destination_.Write(offset, data)
            : ForEachZeroRun(offset, data, plan_.sparse_size,
                             [this](uint64_t run_offset, std::span<const std::byte> run,
                                    bool zero) {
                               if (!zero) return destination_.Write(run_offset, run);
                               if (plan_.skip_zero_ranges) return Status::Ok();
                               return destination_.Zero(run_offset, run.size(), plan_.allocated);
                             });
    if (status.ok()) Done(data.size());
    return status;
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
  std::vector<std::byte> buffer_;
  const bool detect_zeroes_;
  uint64_t copied_ = 0;
};

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                Progress& progress, SequentialBlkhash* blkhash, uint64_t* copied) {
  return SyncCopier(plan, source, destination, progress, blkhash).Run(copied);
}

}  // namespace nbdcopy
