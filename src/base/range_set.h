// A set of byte ranges of an image, kept as disjoint, non-adjacent
// [offset, offset + length) runs in order: adding a range merges it with
// every run it overlaps or touches. What a checkpoint marks done, what a
// --ranges list names, what is still to copy.
// Thread safety: a value; callers lock shared instances.
#ifndef NBDCOPY_BASE_RANGE_SET_H_
#define NBDCOPY_BASE_RANGE_SET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace nbdcopy {

class RangeSet {
 public:
  struct Range {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t end() const { return offset + length; }
    bool operator==(const Range&) const = default;
  };

  // Adds [offset, offset + length); length 0 adds nothing.
  // REQUIRES offset + length does not overflow.
  void Add(uint64_t offset, uint64_t length);
  void Add(const RangeSet& other);
  // Removes [offset, offset + length) wherever it overlaps the set.
  void Remove(uint64_t offset, uint64_t length);
  void Remove(const RangeSet& other);
  void Clear() {
    runs_.clear();
    bytes_ = 0;
  }

  bool empty() const { return runs_.empty(); }
  uint64_t bytes() const { return bytes_; }     // bytes covered
  size_t size() const { return runs_.size(); }  // runs
  // Whether every byte of [offset, offset + length) is in the set.
  bool Contains(uint64_t offset, uint64_t length) const;
  // Bytes of [offset, offset + length) that are in the set.
  uint64_t BytesIn(uint64_t offset, uint64_t length) const;

  // The runs in order.
  std::vector<Range> Runs() const;
  // The runs that overlap [offset, offset + length), clipped to it, in order.
  std::vector<Range> Within(uint64_t offset, uint64_t length) const;
  // The part of [0, size) not in the set, as runs in order.
  std::vector<Range> Gaps(uint64_t size) const;
  // The set shrunk to whole blocks of `alignment` (a power of 2): each run
  // keeps only the aligned blocks wholly inside it; a run reaching `size`
  // keeps its short last block.
  RangeSet AlignedInward(uint64_t alignment, uint64_t size) const;

  bool operator==(const RangeSet&) const = default;

 private:
  std::map<uint64_t, uint64_t> runs_;  // offset -> end
  uint64_t bytes_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_RANGE_SET_H_
