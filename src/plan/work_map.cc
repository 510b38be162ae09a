#include "plan/work_map.h"

#include <algorithm>

namespace nbdcopy {

namespace {

// Calls part(offset, end, inside) for the parts of [offset, end) in order,
// inside telling whether each lies in `set`.
template <typename Part>
void Carve(uint64_t offset, uint64_t end, const RangeSet& set, Part part) {
  uint64_t position = offset;
  for (const RangeSet::Range& run : set.Within(offset, end - offset)) {
    if (run.offset > position) part(position, run.offset, false);
    part(run.offset, run.end(), true);
    position = run.end();
  }
  if (position < end) part(position, end, false);
}

}  // namespace

WorkMap::WorkMap(const PlanRules& rules, bool skip_costly_maps, const Coverage* coverage)
    : rules_(rules),
      skip_costly_maps_(skip_costly_maps),
      unlisted_(coverage != nullptr
                    ? coverage->unlisted.AlignedInward(rules.alignment, rules.image_size)
                    : RangeSet()),
      done_(coverage != nullptr ? coverage->done.AlignedInward(rules.alignment, rules.image_size)
                                : RangeSet()),
      hash_done_(coverage != nullptr && coverage->hash_done),
      unlisted_as_zero_(coverage != nullptr && coverage->unlisted_as_zero),
      window_(skip_costly_maps ? kFirstWindow : kWindow) {}

void WorkMap::CopyAgain(const RangeSet& ranges) {
  if (ranges.empty()) return;  // the common case: no lock
  MutexLock lock(mutex_);
  for (const RangeSet::Range& range : ranges.Runs()) {
    for (uint64_t offset = range.offset; offset < range.end(); offset += rules_.max_data) {
      uint64_t length = std::min(rules_.max_data, range.end() - offset);
      copy_again_.push_back(Piece{offset, length, PieceKind::kCopyAgain});
    }
  }
}

bool WorkMap::TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                        std::deque<Piece>* pieces) {
  MutexLock lock(mutex_);
  const size_t before = pieces->size();
  uint64_t data_taken = 0;
  while (data_taken < batch_bytes && !copy_again_.empty()) {
    data_taken += copy_again_.front().length;
    pieces->push_back(copy_again_.front());
    copy_again_.pop_front();
  }
  while (data_taken < batch_bytes) {
    if (mapped_.empty()) MapMore(source, use_extents);
    if (mapped_.empty()) break;
    const Piece& piece = mapped_.front();
    if (piece.reads()) data_taken += piece.length;
    pieces->push_back(piece);
    mapped_.pop_front();
  }
  return pieces->size() > before;
}

void WorkMap::MapMore(Endpoint& source, bool use_extents) {
  // A window may be all clean (nothing to do): go on to the next.
  while (mapped_.empty() && cursor_ < rules_.image_size) MapWindow(source, use_extents);
}

bool WorkMap::MapPaid(uint64_t start, uint64_t end, size_t extents, uint64_t zero_bytes) const {
  // A map costing under 1/16 of reading its range is cheap whatever it saves.
  return extents * kExtentCost <= zero_bytes + (end - start) / 16;
}

void WorkMap::MapWindow(Endpoint& source, bool use_extents) {
  const uint64_t size = rules_.image_size;
  const uint64_t start = cursor_;
  // A stretch left unasked (skip_costly_maps) is copied as data like a
  // window of a source without extents.
  const bool ask = use_extents && unasked_ == 0;
  const uint64_t window = std::min(size - cursor_, !use_extents ? kWindow
                                                   : ask        ? window_
                                                                : unasked_);
  if (use_extents && !ask) {
    unasked_ = 0;
    stats_.bytes_unasked += window;
  }
  scratch_.clear();
  if (ask) {
    ++stats_.windows_asked;
    Status status = source.Extents(cursor_, window, &scratch_);
    // Only a contiguous answer starting here is trusted; else it is data.
    bool usable = status.ok() && !scratch_.empty() && scratch_.front().offset == cursor_ &&
                  scratch_.front().length > 0;
    for (size_t i = 1; usable && i < scratch_.size(); ++i) {
      usable = scratch_[i].offset == scratch_[i - 1].offset + scratch_[i - 1].length &&
               scratch_[i].length > 0;
    }
    if (!usable) scratch_.clear();
    stats_.extents += scratch_.size();
  }
  const size_t extents = scratch_.size();
  if (scratch_.empty()) scratch_.push_back(Extent{cursor_, window, false});
  planned_.clear();
  cursor_ = PlanPieces(cursor_, scratch_, rules_, &planned_);
  uint64_t zero_bytes = 0;
  for (const Extent& planned : planned_) zero_bytes += HandOut(planned);
  if (!ask || extents == 0) return;
  if (!skip_costly_maps_) {
    window_ = kWindow;
  } else if (MapPaid(start, cursor_, extents, zero_bytes)) {
    unpaid_maps_ = 0;
    window_ = std::min(window_ * 8, kWindow);
  } else {
    ++unpaid_maps_;
    unasked_ = std::min(kFirstWindow << std::min(unpaid_maps_, 8u), kMaxUnasked);
    window_ = kFirstWindow;
  }
  const Extent& last = scratch_.back();
  if ((last.zero || last.clean) && last.length >= kWindow) {
    // Into a long hole: the next window may be as long as 8 times what this
    // answer described (a wide block status describes TiB in one reply).
    window_ = std::min(std::max(cursor_ - start, kWindow), LongestWindow(rules_) / 8) * 8;
  }
}

uint64_t WorkMap::HandOut(const Extent& planned) {
  if (planned.clean) {  // unchanged since the dirty bitmap's checkpoint
    clean_bytes_ += planned.length;
    return 0;
  }
  const PieceKind copied = planned.zero ? PieceKind::kZero : PieceKind::kData;
  if (unlisted_.empty() && done_.empty()) {  // a copy of the whole image
    mapped_.push_back(Piece{planned.offset, planned.length, copied});
    return copied == PieceKind::kZero ? planned.length : 0;
  }
  // The parts of the planned range and their kinds (nullopt: skipped).
  struct Part {
    uint64_t offset, end;
    std::optional<PieceKind> kind;
  };
  std::vector<Part> parts;
  Carve(planned.offset, planned.offset + planned.length, unlisted_,
        [&](uint64_t offset, uint64_t end, bool unlisted) {
          if (unlisted) return parts.push_back({offset, end, CoveredKind(planned, true)});
          Carve(offset, end, done_, [&](uint64_t from, uint64_t to, bool done) {
            parts.push_back({from, to, done ? CoveredKind(planned, false) : copied});
          });
        });
  uint64_t zero_bytes = 0;
  for (const Part& part : parts) {
    if (!part.kind) {
      clean_bytes_ += part.end - part.offset;
      continue;
    }
    if (*part.kind == PieceKind::kZero) zero_bytes += part.end - part.offset;
    mapped_.push_back(Piece{part.offset, part.end - part.offset, *part.kind});
  }
  return zero_bytes;
}

std::optional<PieceKind> WorkMap::CoveredKind(const Extent& planned, bool unlisted) const {
  if (unlisted) return unlisted_as_zero_ ? std::optional(PieceKind::kHashAsZero) : std::nullopt;
  if (!hash_done_) return std::nullopt;
  return planned.zero ? PieceKind::kHashAsZero : PieceKind::kHashOnly;
}

}  // namespace nbdcopy
