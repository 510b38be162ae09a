#include "base/range_set.h"

#include <algorithm>

namespace nbdcopy {

void RangeSet::Add(uint64_t offset, uint64_t length) {
  if (length == 0) return;
  uint64_t start = offset;
  uint64_t end = offset + length;
  // The first run that could touch [start, end): the one before start may
  // reach it.
  auto it = runs_.upper_bound(start);
  if (it != runs_.begin()) {
    auto previous = std::prev(it);
    if (previous->second >= start) it = previous;
  }
  while (it != runs_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    bytes_ -= it->second - it->first;
    it = runs_.erase(it);
  }
  runs_.emplace(start, end);
  bytes_ += end - start;
}

void RangeSet::Add(const RangeSet& other) {
  for (const auto& [start, end] : other.runs_) Add(start, end - start);
}

void RangeSet::Remove(uint64_t offset, uint64_t length) {
  if (length == 0) return;
  const uint64_t start = offset;
  const uint64_t end = offset + length;
  auto it = runs_.upper_bound(start);
  if (it != runs_.begin() && std::prev(it)->second > start) it = std::prev(it);
  while (it != runs_.end() && it->first < end) {
    const uint64_t run_start = it->first;
    const uint64_t run_end = it->second;
    bytes_ -= run_end - run_start;
    it = runs_.erase(it);
    if (run_start < start) {
      runs_.emplace(run_start, start);
      bytes_ += start - run_start;
    }
    if (run_end > end) {
      it = runs_.emplace(end, run_end).first;
      bytes_ += run_end - end;
      break;
    }
  }
}

void RangeSet::Remove(const RangeSet& other) {
  for (const auto& [start, end] : other.runs_) Remove(start, end - start);
}

bool RangeSet::Contains(uint64_t offset, uint64_t length) const {
  if (length == 0) return true;
  auto it = runs_.upper_bound(offset);
  if (it == runs_.begin()) return false;
  --it;
  return it->first <= offset && it->second >= offset + length;
}

uint64_t RangeSet::BytesIn(uint64_t offset, uint64_t length) const {
  const uint64_t end = offset + length;
  uint64_t total = 0;
  auto it = runs_.upper_bound(offset);
  if (it != runs_.begin()) --it;
  for (; it != runs_.end() && it->first < end; ++it) {
    uint64_t a = std::max(it->first, offset);
    uint64_t b = std::min(it->second, end);
    if (b > a) total += b - a;
  }
  return total;
}

std::vector<RangeSet::Range> RangeSet::Runs() const {
  std::vector<Range> runs;
  runs.reserve(runs_.size());
  for (const auto& [start, end] : runs_) runs.push_back(Range{start, end - start});
  return runs;
}

std::vector<RangeSet::Range> RangeSet::Within(uint64_t offset, uint64_t length) const {
  std::vector<Range> within;
  const uint64_t end = offset + length;
  auto it = runs_.upper_bound(offset);
  if (it != runs_.begin()) --it;
  for (; it != runs_.end() && it->first < end; ++it) {
    uint64_t a = std::max(it->first, offset);
    uint64_t b = std::min(it->second, end);
    if (b > a) within.push_back(Range{a, b - a});
  }
  return within;
}

std::vector<RangeSet::Range> RangeSet::Gaps(uint64_t size) const {
  std::vector<Range> gaps;
  uint64_t position = 0;
  for (const auto& [start, end] : runs_) {
    if (start >= size) break;
    if (start > position) gaps.push_back(Range{position, start - position});
    position = std::max(position, end);
  }
  if (position < size) gaps.push_back(Range{position, size - position});
  return gaps;
}

RangeSet RangeSet::AlignedInward(uint64_t alignment, uint64_t size) const {
  RangeSet aligned;
  for (const auto& [start, end] : runs_) {
    uint64_t a = (start + alignment - 1) / alignment * alignment;
    uint64_t b = end >= size ? end : end / alignment * alignment;
    if (b > a) aligned.Add(a, b - a);
  }
  return aligned;
}

}  // namespace nbdcopy
