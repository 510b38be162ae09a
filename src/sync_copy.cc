#include "nbdcopy/sync_copy.h"

#include "nbdcopy/zero_detect.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nbdcopy {

namespace {

// Extents are asked for this much at a time: big enough that sparse images
// need few queries, small enough to bound the extent list.
constexpr uint64_t kExtentWindow = 1ULL << 30;
// Zero ranges are issued in pieces so progress moves on huge holes.
constexpr uint64_t kZeroChunk = 1ULL << 30;

class SyncCopier {
 public:
  SyncCopier(const CopyPlan& plan, Endpoint& source, Endpoint& destination, Progress& progress)
      : plan_(plan),
        source_(source),
        destination_(destination),
        progress_(progress),
        buffer_(plan.request_size),
        detect_zeroes_(plan.sparse_size > 0 && destination.info().efficient_zero) {}

  Status Run() {
    Status status = source_.info().size ? CopySized(*source_.info().size) : CopyStream();
    if (status.ok() && plan_.flush) status = destination_.Flush();
    return status;
  }

 private:
  Status CopySized(uint64_t size) {
    std::vector<Extent> extents;
    for (uint64_t position = 0; position < size;) {
      uint64_t window = std::min(size - position, kExtentWindow);
      extents.clear();
      if (plan_.use_extents) {
        Status status = source_.Extents(position, window, &extents);
        // A failed or empty answer is not fatal: the range is data.
        if (!status.ok() || extents.empty() || extents.front().offset != position) {
          extents.assign(1, Extent{position, window, false});
        }
      } else {
        extents.assign(1, Extent{position, window, false});
      }
      for (const Extent& extent : extents) {
        Status status = extent.zero ? ZeroRange(extent.offset, extent.length)
                                    : CopyData(extent.offset, extent.length);
        if (!status.ok()) return status;
      }
      position = extents.back().offset + extents.back().length;
    }
    return Status::Ok();
  }

  Status CopyStream() {
    for (uint64_t position = 0;;) {
      Result<size_t> got = source_.Read(position, buffer_);
      if (!got.ok()) return got.status();
      if (*got == 0) return Status::Ok();
      Status status = WriteData(position, std::span(buffer_.data(), *got));
      if (!status.ok()) return status;
      position += *got;
      progress_.Add(*got);
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
      progress_.Add(n);
    }
    return Status::Ok();
  }

  Status ZeroRange(uint64_t offset, uint64_t length) {
    while (length > 0) {
      uint64_t n = std::min(length, kZeroChunk);
      Status status = ZeroOrSkip(offset, n);
      if (!status.ok()) return status;
      offset += n;
      length -= n;
      progress_.Add(n);
    }
    return Status::Ok();
  }

  Status ZeroOrSkip(uint64_t offset, uint64_t length) {
    if (plan_.skip_zero_ranges) return Status::Ok();
    return destination_.Zero(offset, length, plan_.allocated);
  }

  // Writes data read from offset; runs of all-zero blocks become zero
  // operations.
  Status WriteData(uint64_t offset, std::span<const std::byte> data) {
    if (!detect_zeroes_) return destination_.Write(offset, data);
    return ForEachZeroRun(offset, data, plan_.sparse_size,
                          [this](uint64_t run_offset, std::span<const std::byte> run, bool zero) {
                            if (zero) return ZeroOrSkip(run_offset, run.size());
                            return destination_.Write(run_offset, run);
                          });
  }

  const CopyPlan& plan_;
  Endpoint& source_;
  Endpoint& destination_;
  Progress& progress_;
  std::vector<std::byte> buffer_;
  const bool detect_zeroes_;
};

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                Progress& progress) {
  return SyncCopier(plan, source, destination, progress).Run();
}

}  // namespace nbdcopy
