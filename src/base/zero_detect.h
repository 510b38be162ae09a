// Zero detection in read data: splits a buffer into runs of data and runs of
// all-zero blocks, with blocks aligned to the granularity in the image (not
// in the buffer), so the same image gives the same runs whatever the
// request size.
#ifndef NBDCOPY_ZERO_DETECT_H_
#define NBDCOPY_ZERO_DETECT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "nbdcopy/status.h"

namespace nbdcopy {

// True if every byte of data is zero.
bool IsZero(std::span<const std::byte> data);

// Calls visit(run_offset, run_bytes, is_zero) for each maximal run, in
// order; stops at the first non-OK Status visit returns and returns it.
// data holds the image bytes starting at offset. REQUIRES granule > 0.
template <typename Visit>
Status ForEachZeroRun(uint64_t offset, std::span<const std::byte> data, uint64_t granule,
                      Visit visit) {
  size_t run_start = 0;
  bool run_zero = false;
  for (size_t position = 0; position < data.size();) {
    uint64_t absolute = offset + position;
    size_t block = std::min<uint64_t>(granule - absolute % granule, data.size() - position);
    bool zero = IsZero(data.subspan(position, block));
    if (position > 0 && zero != run_zero) {
      Status status = visit(offset + run_start, data.subspan(run_start, position - run_start),
                            run_zero);
      if (!status.ok()) return status;
      run_start = position;
    }
    run_zero = zero;
    position += block;
  }
  if (run_start == data.size()) return Status::Ok();
  return visit(offset + run_start, data.subspan(run_start), run_zero);
}

}  // namespace nbdcopy

#endif  // NBDCOPY_ZERO_DETECT_H_
