// When the engines ask the destination to share the source's blocks
// (Endpoint::CloneRangeFrom) instead of copying data: the one rule both
// use. Runs of contiguous data pieces are asked for together, up to
// kMaxRun bytes. Attempts end at the first answer that holds for every
// range (kUnsupported), at the first refusal before anything was cloned,
// or after kMaxRefusalsInARow refused ranges; a refused range is never
// asked again, and its data is copied as usual.
// Thread safety: one per worker.
#ifndef NBDCOPY_ENGINE_CLONE_RULE_H_
#define NBDCOPY_ENGINE_CLONE_RULE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "nbdcopy/endpoint.h"
#include "plan/piece.h"

namespace nbdcopy {

class CloneRule {
 public:
  static constexpr uint64_t kMaxRun = uint64_t{1} << 30;
  static constexpr unsigned kMaxRefusalsInARow = 16;

  struct Run {
    uint64_t offset = 0;
    uint64_t length = 0;
    size_t pieces = 0;  // how many pieces at the front it covers
  };

  explicit CloneRule(bool enabled) : enabled_(enabled) {}

  // The run to try at the front of pieces (contiguous pieces of the
  // front's kind), or nullopt: not cloning, the front is no data piece
  // (kData, kCopyAgain), or it lies in a range refused before.
  [[nodiscard]] std::optional<Run> Next(const std::deque<Piece>& pieces) const;
  // What the destination answered for run; true if it was cloned.
  bool Record(const Run& run, CloneResult result);

 private:
  bool enabled_;
  bool cloned_any_ = false;
  unsigned refusals_in_a_row_ = 0;
  uint64_t refused_until_ = 0;  // the end of the last refused run
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_CLONE_RULE_H_
