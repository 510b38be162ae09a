// The synchronous engine's side of the destination, shared by its sized
// and its stream loop: read data and zero pieces go to the destination as
// the piece policy says, hashed in order, counted, and reported.
// Thread safety: one thread.
#ifndef NBDCOPY_ENGINE_SYNC_WRITER_H_
#define NBDCOPY_ENGINE_SYNC_WRITER_H_

#include <cstdint>
#include <optional>
#include <span>

#include "engine/copy_stats.h"
#include "engine/piece_policy.h"
#include "engine/progress_sink.h"
#include "engine/rate_limiter.h"
#include "hash/blkhash.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

class SyncWriter {
 public:
  // blkhash may be nullptr (not hashing). All references must outlive it.
  SyncWriter(const CopyPlan& plan, Endpoint& destination, ProgressSink& progress,
             SequentialBlkhash* blkhash, CopyStats& stats)
      : plan_(plan),
        destination_(destination),
        policy_(plan, destination.info()),
        progress_(progress),
        blkhash_(blkhash),
        stats_(stats) {
    if (plan.rate > 0) rate_.emplace(plan.rate);
  }

  // For `bytes` read from the source (before reading them, or after for a
  // stream, whose reads may come short): waits as long as --rate says, or
  // until a cancel is asked.
  void PaceRead(uint64_t bytes);

  // Data read from the source at offset. stored holds data followed by the
  // destination's own bytes that pad a last block (stored.size() >=
  // data.size()); only data is hashed and counted as copied.
  [[nodiscard]] Status WriteData(uint64_t offset, std::span<const std::byte> data,
                                 std::span<const std::byte> stored);
  // A zero piece of the plan.
  [[nodiscard]] Status ZeroPiece(uint64_t offset, uint64_t length);
  // Data copied again (--retry): written as before, not hashed or counted.
  [[nodiscard]] Status Rewrite(uint64_t offset, std::span<const std::byte> data);
  // A skipped range read or known zero, for the checksum only.
  void HashOnly(std::span<const std::byte> data) {
    if (blkhash_ != nullptr) blkhash_->Data(data);
  }
  void HashZeroesOnly(uint64_t length) {
    if (blkhash_ != nullptr) blkhash_->Zeroes(length);
  }
  // Bytes that reached the destination without passing here (clones).
  void Done(uint64_t bytes);

  uint64_t copied() const { return copied_; }
  CopyStats& stats() { return stats_; }

 private:
  [[nodiscard]] Status Apply(uint64_t offset, std::span<const std::byte> run, RunAction action);

  const CopyPlan& plan_;
  Endpoint& destination_;
  const PiecePolicy policy_;
  ProgressSink& progress_;
  SequentialBlkhash* const blkhash_;
  CopyStats& stats_;
  std::optional<RateLimiter> rate_;
  uint64_t copied_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_SYNC_WRITER_H_
