#include "nbdcopy/work_map.h"

#include <algorithm>

namespace nbdcopy {

bool WorkMap::TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                        std::deque<Extent>* pieces) {
  std::lock_guard lock(mutex_);
  const size_t before = pieces->size();
  uint64_t data_taken = 0;
  while (data_taken < batch_bytes) {
    if (mapped_.empty()) MapMore(source, use_extents);
    if (mapped_.empty()) break;
    const Extent& operation = mapped_.front();
    if (!operation.zero) data_taken += operation.length;
    pieces->push_back(operation);
    mapped_.pop_front();
  }
  return pieces->size() > before;
}

void WorkMap::MapMore(Endpoint& source, bool use_extents) {
  // A window may be all clean (nothing to do): go on to the next.
  while (mapped_.empty() && cursor_ < rules_.image_size) MapWindow(source, use_extents);
}

void WorkMap::MapWindow(Endpoint& source, bool use_extents) {
  const uint64_t size = rules_.image_size;
  const uint64_t window = std::min(size - cursor_, kWindow);
  scratch_.clear();
  if (use_extents) {
    Status status = source.Extents(cursor_, window, &scratch_);
    // Only a contiguous answer starting here is trusted; else it is data.
    bool usable = status.ok() && !scratch_.empty() && scratch_.front().offset == cursor_ &&
                  scratch_.front().length > 0;
    for (size_t i = 1; usable && i < scratch_.size(); ++i) {
      usable = scratch_[i].offset == scratch_[i - 1].offset + scratch_[i - 1].length &&
               scratch_[i].length > 0;
    }
    if (!usable) scratch_.clear();
  }
  if (scratch_.empty()) scratch_.push_back(Extent{cursor_, window, false});
  planned_.clear();
  cursor_ = PlanOperations(cursor_, scratch_, rules_, &planned_);
  for (const Extent& operation : planned_) {
    if (operation.clean) {
      clean_bytes_ += operation.length;  // an incremental copy leaves it alone
    } else {
      mapped_.push_back(operation);
    }
  }
}

}  // namespace nbdcopy
