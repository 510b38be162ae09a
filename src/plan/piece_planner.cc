#include "plan/piece_planner.h"

#include <algorithm>
#include <limits>

namespace nbdcopy {

namespace {

uint64_t RoundDown(uint64_t value, uint64_t alignment) { return value / alignment * alignment; }
uint64_t RoundUp(uint64_t value, uint64_t alignment) {
  return RoundDown(value + alignment - 1, alignment);
}

enum class Kind { kData, kZero, kClean };

// Emits runs in image order, merging neighbours of the same kind, and
// splits them into pieces no longer than the rules allow.
class PieceWriter {
 public:
  PieceWriter(const PlanRules& rules, std::vector<Extent>* out) : rules_(rules), out_(out) {}

  void Add(uint64_t offset, uint64_t length, Kind kind) {
    if (length == 0) return;
    if (pending_length_ > 0 && pending_kind_ == kind) {
      pending_length_ += length;
      return;
    }
    Flush();
    pending_offset_ = offset;
    pending_length_ = length;
    pending_kind_ = kind;
  }

  void Flush() {
    // Clean ranges are no I/O at all: nothing limits them.
    const bool zero = pending_kind_ == Kind::kZero;
    const bool clean = pending_kind_ == Kind::kClean;
    const uint64_t limit = zero    ? rules_.max_zero
                           : !clean ? rules_.max_data
                                    : std::numeric_limits<uint64_t>::max();
    while (pending_length_ > 0) {
      uint64_t n = std::min(pending_length_, limit);
      out_->push_back(Extent{.offset = pending_offset_,
                             .length = n,
                             .zero = zero,
                             .clean = clean});
      pending_offset_ += n;
      pending_length_ -= n;
    }
  }

 private:
  const PlanRules& rules_;
  std::vector<Extent>* out_;
  uint64_t pending_offset_ = 0;
  uint64_t pending_length_ = 0;
  Kind pending_kind_ = Kind::kData;
};

// A maximal run of neighbouring extents that all pass `in_run`, clipped to
// [from, to); empty (begin == end) when there is none. *i moves past it.
// The search stops at `to`, so planning many short ranges of one answer
// stays linear in its extents.
template <typename Predicate>
std::pair<uint64_t, uint64_t> NextRun(std::span<const Extent> extents, size_t* i, uint64_t from,
                                      uint64_t to, Predicate in_run) {
  while (*i < extents.size() && extents[*i].offset < to && !in_run(extents[*i])) ++*i;
  if (*i == extents.size() || extents[*i].offset >= to) return {to, to};
  uint64_t run_start = std::max(extents[*i].offset, from);
  uint64_t run_end = run_start;
  for (; *i < extents.size() && in_run(extents[*i]); ++*i) {
    run_end = extents[*i].offset + extents[*i].length;
  }
  run_end = std::min(run_end, to);
  return {std::min(run_start, run_end), run_end};
}

// Plans [from, to), a range to be copied (both ends aligned, or `to` the
// image's end): large zero runs become zero pieces, the rest data.
// `first` is the index of the first extent that may overlap it.
void PlanCopiedRange(uint64_t from, uint64_t to, std::span<const Extent> extents, size_t first,
                     const PlanRules& rules, PieceWriter* writer) {
  const uint64_t align = rules.alignment;
  uint64_t position = from;  // everything before is emitted
  if (rules.zero_extents) {
    size_t i = first;
    while (position < to) {
      auto [run_start, run_end] =
          NextRun(extents, &i, position, to, [](const Extent& e) { return e.zero; });
      if (run_end <= run_start) {
        if (i >= extents.size() || extents[i].offset >= to) break;
        continue;
      }
      uint64_t zero_start = RoundUp(run_start, align);
      uint64_t zero_end = run_end == rules.image_size ? run_end : RoundDown(run_end, align);
      if (zero_end <= zero_start || zero_end - zero_start < rules.coalesce_below) continue;
      writer->Add(position, zero_start - position, Kind::kData);
      writer->Add(zero_start, zero_end - zero_start, Kind::kZero);
      position = zero_end;
    }
  }
  writer->Add(position, to - position, Kind::kData);
}

}  // namespace

uint64_t PlanPieces(uint64_t start, std::span<const Extent> extents, const PlanRules& rules,
                    std::vector<Extent>* pieces) {
  const uint64_t size = rules.image_size;
  const uint64_t align = rules.alignment;
  uint64_t end = std::min(size, extents.back().offset + extents.back().length);
  if (end != size) {
    uint64_t aligned = RoundDown(end, align);
    end = aligned > start ? aligned : std::min(size, start + align);
  }

  PieceWriter writer(rules, pieces);
  uint64_t position = start;  // everything before is emitted
  size_t segment_first = 0;   // first extent that may overlap [position, ...)
  if (rules.skip_clean) {
    // Clean runs, shrunk to whole blocks, are skipped; what lies between
    // them is planned as a copied range.
    size_t i = 0;
    while (position < end && i < extents.size()) {
      auto [run_start, run_end] =
          NextRun(extents, &i, position, end, [](const Extent& e) { return e.clean; });
      // No clean run left before the end (the answer may reach past it).
      if (run_end <= run_start && (i == extents.size() || extents[i].offset >= end)) break;
      uint64_t clean_start = RoundUp(run_start, align);
      uint64_t clean_end = run_end == size ? run_end : RoundDown(run_end, align);
      if (clean_end <= clean_start) continue;
      PlanCopiedRange(position, clean_start, extents, segment_first, rules, &writer);
      writer.Add(clean_start, clean_end - clean_start, Kind::kClean);
      position = clean_end;
      segment_first = i == 0 ? 0 : i - 1;  // the run's last extent may reach past clean_end
    }
  }
  PlanCopiedRange(position, end, extents, segment_first, rules, &writer);
  writer.Flush();
  return end;
}

}  // namespace nbdcopy
