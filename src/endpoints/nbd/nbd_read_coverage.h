// The read-coverage check: libnbd 1.14 accepts a structured read reply
// whose chunks leave part of the buffer unfilled (or fill part twice), and
// an unfilled part would be copied as whatever the buffer held before. A
// read counts as done only when its chunks cover the range exactly once,
// in any order. libnbd has already checked that each chunk lies inside the
// request.
//
// Thread safety: a value, used by one thread at a time.
#ifndef NBDCOPY_NBD_READ_COVERAGE_H_
#define NBDCOPY_NBD_READ_COVERAGE_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace nbdcopy {

class ReadCoverage {
 public:
  // Starts over for a read of [offset, offset + length); keeps the memory
  // of earlier reads, so a pooled checker allocates only at first.
  void Reset(uint64_t offset, uint64_t length) {
    offset_ = offset;
    end_ = offset + length;
    filled_ = offset;
    scattered_.clear();
  }

  // One chunk the server sent (data or a hole).
  // REQUIRES the chunk lies inside the range.
  void AddChunk(uint64_t offset, uint64_t length) {
    // The usual case, chunks in order, only moves a position.
    if (offset == filled_) {
      filled_ += length;
    } else {
      scattered_.emplace_back(offset, length);
    }
  }

  // Whether the chunks so far cover the range exactly once: no gap, no
  // overlap, nothing past the end.
  [[nodiscard]] bool CoveredExactlyOnce() const;

 private:
  uint64_t offset_ = 0;
  uint64_t end_ = 0;
  // [offset_, filled_) came in order; scattered_ holds the other chunks
  // as (offset, length).
  uint64_t filled_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> scattered_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_READ_COVERAGE_H_
