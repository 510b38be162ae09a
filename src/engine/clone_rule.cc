#include "engine/clone_rule.h"

namespace nbdcopy {

std::optional<CloneRule::Run> CloneRule::Next(const std::deque<Piece>& pieces) const {
  if (!enabled_ || pieces.empty()) return std::nullopt;
  const PieceKind kind = pieces.front().kind;
  if (kind != PieceKind::kData && kind != PieceKind::kCopyAgain) return std::nullopt;
  if (pieces.front().offset < refused_until_) return std::nullopt;
  Run run{pieces.front().offset, 0, 0};
  for (const Piece& piece : pieces) {
    if (piece.kind != kind || piece.offset != run.offset + run.length ||
        run.length + piece.length > kMaxRun) {
      break;
    }
    run.length += piece.length;
    ++run.pieces;
  }
  if (run.pieces == 0) return std::nullopt;  // a first piece over kMaxRun: not planned
  return run;
}

bool CloneRule::Record(const Run& run, CloneResult result) {
  switch (result) {
    case CloneResult::kCloned:
      cloned_any_ = true;
      refusals_in_a_row_ = 0;
      return true;
    case CloneResult::kRangeRefused:
      refused_until_ = run.offset + run.length;
      // Refused before anything was cloned: the pair most likely cannot.
      if (!cloned_any_ || ++refusals_in_a_row_ >= kMaxRefusalsInARow) enabled_ = false;
      return false;
    case CloneResult::kUnsupported:
      enabled_ = false;
      return false;
  }
  return false;
}

}  // namespace nbdcopy
