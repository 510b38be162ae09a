#include "nbdcopy/work_map.h"

#include <algorithm>

namespace nbdcopy {

bool WorkMap::TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                        std::deque<Extent>* pieces) {
  std::lock_guard lock(mutex_);
  if (mapped_.empty()) MapMore(source, use_extents);
  if (mapped_.empty()) return false;
  uint64_t data_taken = 0;
  while (!mapped_.empty() && data_taken < batch_bytes) {
    Extent& front = mapped_.front();
    uint64_t n = front.zero ? std::min(front.length, kMaxZeroPiece)
                            : std::min(front.length, batch_bytes - data_taken);
    pieces->push_back(Extent{front.offset, n, front.zero});
    if (!front.zero) data_taken += n;
    front.offset += n;
    front.length -= n;
    if (front.length == 0) mapped_.pop_front();
  }
  return true;
}

void WorkMap::MapMore(Endpoint& source, bool use_extents) {
  if (cursor_ >= size_) return;
  const uint64_t window = std::min(size_ - cursor_, kWindow);
  scratch_.clear();
  if (use_extents) {
    Status status = source.Extents(cursor_, window, &scratch_);
    // Only a contiguous answer starting here is trusted; else it is data.
    bool usable = status.ok() && !scratch_.empty() && scratch_.front().offset == cursor_;
    for (size_t i = 1; usable && i < scratch_.size(); ++i) {
      usable = scratch_[i].offset == scratch_[i - 1].offset + scratch_[i - 1].length &&
               scratch_[i].length > 0;
    }
    if (!usable) scratch_.clear();
  }
  if (scratch_.empty()) scratch_.push_back(Extent{cursor_, window, false});
  if (block_size_ > 0) AlignToBlocks(&scratch_);
  for (const Extent& extent : scratch_) Append(extent);
  cursor_ = scratch_.back().offset + scratch_.back().length;
}

void WorkMap::AlignToBlocks(std::vector<Extent>* extents) const {
  const uint64_t block = block_size_;
  uint64_t start = extents->front().offset;
  uint64_t end = extents->back().offset + extents->back().length;
  // The next window must start on a block boundary too.
  if (end != size_ && end % block != 0) {
    uint64_t aligned_end = end / block * block;
    end = aligned_end > start ? aligned_end : std::min(size_, start + block);
  }
  std::vector<Extent> aligned;
  auto add = [&aligned](uint64_t offset, uint64_t length, bool zero) {
    if (length == 0) return;
    if (!aligned.empty() && aligned.back().zero == zero) {
      aligned.back().length += length;
    } else {
      aligned.push_back(Extent{offset, length, zero});
    }
  };
  uint64_t position = start;
  for (const Extent& extent : *extents) {
    uint64_t extent_end = std::min(extent.offset + extent.length, end);
    if (extent_end <= position) continue;
    if (extent.zero) {
      uint64_t zero_start = (position + block - 1) / block * block;
      uint64_t zero_end = extent_end == size_ ? extent_end : extent_end / block * block;
      if (zero_start < zero_end) {
        add(position, zero_start - position, false);
        add(zero_start, zero_end - zero_start, true);
        position = zero_end;
      }
    }
    add(position, extent_end - position, false);
    position = extent_end;
  }
  if (position < end) add(position, end - position, false);  // beyond the answer: data
  *extents = std::move(aligned);
}

void WorkMap::Append(const Extent& extent) {
  if (!mapped_.empty() && mapped_.back().zero == extent.zero &&
      mapped_.back().offset + mapped_.back().length == extent.offset) {
    mapped_.back().length += extent.length;
  } else {
    mapped_.push_back(extent);
  }
}

}  // namespace nbdcopy
