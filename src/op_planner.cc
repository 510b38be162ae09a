#include "nbdcopy/op_planner.h"

#include <algorithm>

namespace nbdcopy {

namespace {

uint64_t RoundDown(uint64_t value, uint64_t alignment) { return value / alignment * alignment; }
uint64_t RoundUp(uint64_t value, uint64_t alignment) {
  return RoundDown(value + alignment - 1, alignment);
}

// Emits runs in image order, merging neighbours of the same kind, and
// splits them into operations no longer than the rules allow.
class OperationWriter {
 public:
  OperationWriter(const PlanRules& rules, std::vector<Extent>* out) : rules_(rules), out_(out) {}

  void Add(uint64_t offset, uint64_t length, bool zero) {
    if (length == 0) return;
    if (pending_.length > 0 && pending_.zero == zero) {
      pending_.length += length;
      return;
    }
    Flush();
    pending_ = Extent{offset, length, zero};
  }

  void Flush() {
    const uint64_t limit = pending_.zero ? rules_.max_zero : rules_.max_data;
    while (pending_.length > 0) {
      uint64_t n = std::min(pending_.length, limit);
      out_->push_back(Extent{pending_.offset, n, pending_.zero});
      pending_.offset += n;
      pending_.length -= n;
    }
  }

 private:
  const PlanRules& rules_;
  std::vector<Extent>* out_;
  Extent pending_;
};

}  // namespace

uint64_t PlanOperations(uint64_t start, std::span<const Extent> extents, const PlanRules& rules,
                        std::vector<Extent>* operations) {
  const uint64_t size = rules.image_size;
  const uint64_t align = rules.alignment;
  uint64_t end = std::min(size, extents.back().offset + extents.back().length);
  if (end != size) {
    uint64_t aligned = RoundDown(end, align);
    end = aligned > start ? aligned : std::min(size, start + align);
  }

  OperationWriter writer(rules, operations);
  uint64_t position = start;  // everything before is emitted
  // Walks maximal zero runs (adjacent zero extents merged); what lies
  // between them is data.
  for (size_t i = 0; i < extents.size() && position < end;) {
    if (!extents[i].zero) {
      ++i;
      continue;
    }
    uint64_t run_start = std::max(extents[i].offset, position);
    uint64_t run_end = extents[i].offset + extents[i].length;
    for (++i; i < extents.size() && extents[i].zero; ++i) {
      run_end = extents[i].offset + extents[i].length;
    }
    run_end = std::min(run_end, end);
    if (run_end <= run_start) continue;
    uint64_t zero_start = RoundUp(run_start, align);
    uint64_t zero_end = run_end == size ? run_end : RoundDown(run_end, align);
    if (zero_end <= zero_start || zero_end - zero_start < rules.coalesce_below) continue;
    writer.Add(position, zero_start - position, false);
    writer.Add(zero_start, zero_end - zero_start, true);
    position = zero_end;
  }
  writer.Add(position, end - position, false);
  writer.Flush();
  return end;
}

}  // namespace nbdcopy
