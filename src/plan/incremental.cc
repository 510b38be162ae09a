#include "plan/incremental.h"

#include <fmt/format.h>

#include <deque>

#include "nbdcopy/cancel.h"
#include "plan/work_map.h"

namespace nbdcopy {

Result<DirtySummary> SummarizeDirty(const CopyPlan& plan, Endpoint& source) {
  if (Status status = CheckFinishedFor(plan, source); !status.ok()) return status;
  // Done ranges handed out as hashed (never skipped), so that they count.
  Coverage counted = plan.coverage != nullptr ? *plan.coverage : Coverage();
  counted.hash_done = true;
  WorkMap map(plan.rules, false, &counted);
  DirtySummary summary;
  std::deque<Piece> pieces;
  uint64_t previous_end = UINT64_MAX;  // where the last piece ended
  while (map.TakeBatch(source, plan.use_extents, 1ULL << 30, &pieces)) {
    if (CancelRequested()) return CancelledStatus();
    for (const Piece& piece : pieces) {
      if (piece.offset != previous_end) ++summary.ranges;
      summary.dirty_bytes += piece.length;
      if (piece.kind == PieceKind::kHashOnly || piece.kind == PieceKind::kHashAsZero) {
        summary.done_bytes += piece.length;
      }
      previous_end = piece.end();
    }
    pieces.clear();
  }
  summary.clean_bytes = map.clean_bytes();
  return summary;
}

std::string DescribeDirty(const DirtySummary& summary, uint64_t size) {
  return fmt::format("dirty={} ranges={} clean={} size={}", summary.dirty_bytes, summary.ranges,
                     summary.clean_bytes, size);
}

}  // namespace nbdcopy
