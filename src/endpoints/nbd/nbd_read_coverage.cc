#include "endpoints/nbd/nbd_read_coverage.h"

#include <algorithm>

namespace nbdcopy {

bool ReadCoverage::CoveredExactlyOnce() const {
  if (scattered_.empty()) return filled_ == end_;
  auto pieces = scattered_;
  pieces.emplace_back(offset_, filled_ - offset_);
  std::sort(pieces.begin(), pieces.end());
  uint64_t position = offset_;
  for (const auto& [start, length] : pieces) {
    if (start != position) return false;  // a gap or an overlap
    position += length;
  }
  return position == end_;
}

}  // namespace nbdcopy
