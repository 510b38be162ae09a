#include "plan/work_map.h"

#include <algorithm>

namespace nbdcopy {

namespace {

// Appends to *parts the parts of `piece` in order, those inside `done`
// (whole blocks) marked clean.
void CarveDone(const Extent& piece, const RangeSet& done, std::vector<Extent>* parts) {
  uint64_t position = piece.offset;
  auto part = [&](uint64_t end, bool is_done) {
    if (end <= position) return;
    Extent cut = piece;
    cut.offset = position;
    cut.length = end - position;
    cut.clean = is_done;
    parts->push_back(cut);
    position = end;
  };
  for (const RangeSet::Range& run : done.Within(piece.offset, piece.length)) {
    part(run.offset, false);
    part(run.end(), true);
  }
  part(piece.offset + piece.length, false);
}

}  // namespace

void WorkMap::Redo(const RangeSet& ranges) {
  if (ranges.empty()) return;  // the common case: no lock
  MutexLock lock(mutex_);
  for (const RangeSet::Range& range : ranges.Runs()) {
    for (uint64_t offset = range.offset; offset < range.end(); offset += rules_.max_data) {
      uint64_t length = std::min(rules_.max_data, range.end() - offset);
      redo_.push_back(Extent{.offset = offset, .length = length, .redo = true});
    }
  }
}

bool WorkMap::TakeBatch(Endpoint& source, bool use_extents, uint64_t batch_bytes,
                        std::deque<Extent>* pieces) {
  MutexLock lock(mutex_);
  const size_t before = pieces->size();
  uint64_t data_taken = 0;
  while (data_taken < batch_bytes && !redo_.empty()) {
    data_taken += redo_.front().length;
    pieces->push_back(redo_.front());
    redo_.pop_front();
  }
  while (data_taken < batch_bytes) {
    if (mapped_.empty()) MapMore(source, use_extents);
    if (mapped_.empty()) break;
    const Extent& piece = mapped_.front();
    if (!piece.zero) data_taken += piece.length;
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
  // What a checkpoint marks done (or a list leaves out) becomes clean here,
  // in whole blocks, however the source described it.
  if (done_) {
    scratch_.clear();
    for (const Extent& piece : planned_) {
      if (piece.clean) {
        scratch_.push_back(piece);
      } else {
        CarveDone(piece, *done_, &scratch_);
      }
    }
    planned_.swap(scratch_);
  }
  uint64_t zero_bytes = 0;
  for (Extent& piece : planned_) {
    if (piece.clean && rules_.clean_as_zero) {
      piece.zero = true;
      mapped_.push_back(piece);
    } else if (piece.clean && !rules_.describe_clean) {
      clean_bytes_ += piece.length;  // an incremental copy leaves it alone
    } else {
      if (piece.zero && !piece.clean) zero_bytes += piece.length;
      mapped_.push_back(piece);
    }
  }
  if (!ask || !skip_costly_maps_ || extents == 0) return;
  if (MapPaid(start, cursor_, extents, zero_bytes)) {
    unpaid_maps_ = 0;
    window_ = std::min(window_ * 8, kWindow);
  } else {
    ++unpaid_maps_;
    unasked_ = std::min(kFirstWindow << std::min(unpaid_maps_, 8u), kMaxUnasked);
    window_ = kFirstWindow;
  }
}

}  // namespace nbdcopy
