// The synchronous engine's side of the destination, shared by its sized
// and its stream loop: read data and zero pieces go to the destination as
// the piece policy says, run by run, counted in the statistics. (What the
// copy records besides, progress and checksum among it, is the books':
// engine/copy_books.h.)
// Thread safety: one thread.
#ifndef NBDCOPY_ENGINE_SYNC_WRITER_H_
#define NBDCOPY_ENGINE_SYNC_WRITER_H_

#include <cstdint>
#include <span>

#include "engine/copy_stats.h"
#include "engine/piece_policy.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

class SyncWriter {
 public:
  // All references must outlive it.
  SyncWriter(const CopyPlan& plan, Endpoint& destination, CopyStats& stats)
      : plan_(plan), destination_(destination), policy_(plan, destination.info()), stats_(stats) {}

  // Bytes read from the source at offset (followed, at a stream's end, by
  // the destination's own bytes that pad its last block): each run
  // written, zeroed or skipped.
  [[nodiscard]] Status WriteRuns(uint64_t offset, std::span<const std::byte> stored);
  // A zero piece of the plan: one zero operation, or nothing.
  [[nodiscard]] Status ZeroPiece(uint64_t offset, uint64_t length);

  CopyStats& stats() { return stats_; }

 private:
  [[nodiscard]] Status Apply(uint64_t offset, std::span<const std::byte> run, RunAction action);

  const CopyPlan& plan_;
  Endpoint& destination_;
  const PiecePolicy policy_;
  CopyStats& stats_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_SYNC_WRITER_H_
