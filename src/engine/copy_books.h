// Everything a copy records besides moving bytes, behind one seam that both
// engines call the same way: progress, the checksum, the --rate cap, the
// ranges done and made durable (--checkpoint, --retry: engine/checkpointer.h),
// the ranges a destination restart hands back to copy again, and the flush
// at the end. Each of those features lives here once; a copy loop only says
// what happened to a piece (plan/piece.h): started, read, zeroes, done.
// Without a feature its calls cost a test of a null pointer.
//
// CopyBooks is the copy's, shared by its loops; each loop (a worker of the
// parallel engine, the synchronous engine) keeps a Bookkeeper of its own,
// which gathers neighbouring completions before telling the shared books
// (one lock per run of them, not per request) and watches its own
// destination connection for restarts.
#ifndef NBDCOPY_ENGINE_COPY_BOOKS_H_
#define NBDCOPY_ENGINE_COPY_BOOKS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/checkpointer.h"
#include "engine/progress_sink.h"
#include "engine/rate_limiter.h"
#include "engine/salvage.h"
#include "hash/blkhash.h"
#include "hash/ordered_checksum.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"
#include "plan/piece.h"
#include "plan/work_map.h"

namespace nbdcopy {

// The failure of a copy from a stream whose destination reconnected: the
// server may have lost writes, and the stream cannot be read again.
[[nodiscard]] Status CannotCopyAgain(const Endpoint& destination);

// Thread safety: every method may be called from any loop's thread.
class CopyBooks {
 public:
  // blkhash: nullptr, or the blkhash, fed by block index in any order
  // (the parallel engine); sequential: nullptr, or the blkhash fed in
  // image order (the synchronous engine). checksum: nullptr, or the plain
  // digest (--checksum), which keeps a loop's read buffers until it has
  // hashed them (Bookkeeper::ReadKept). checkpointer: nullptr, or what
  // records the done ranges. lost: nullptr, or the record of what
  // --salvage could not read (Bookkeeper::Rescue). All must outlive the
  // books.
  CopyBooks(const CopyPlan& plan, ProgressSink& progress, Blkhash* blkhash,
            SequentialBlkhash* sequential, Checkpointer* checkpointer,
            OrderedChecksum* checksum = nullptr, LostRanges* lost = nullptr);

  // The copy failed: progress counts nothing more (no 100 % for it), but
  // ranges done still become durable at the last checkpoint; the checksum
  // gives back every buffer it holds.
  void StopCounting();

  // A loop's read buffers may be kept a while (Bookkeeper::ReadKept).
  bool keeps_read_buffers() const { return checksum_ != nullptr; }

  // The end of a round of the loops (all have ended): with a checkpointer,
  // the last checkpoint, which is also the flush, and into `map` what a
  // loss of `destination` during it hands back (*again: there is more to
  // copy, another round; map nullptr: a stream, which cannot be read
  // again: CannotCopyAgain); without one, plan.flush's flush. stopped: the
  // copy failed or was interrupted: only what is durable is kept, and the
  // caller ignores what this returns.
  [[nodiscard]] Status EndRound(Endpoint& destination, WorkMap* map, bool stopped, bool* again);

 private:
  friend class Bookkeeper;

  const CopyPlan& plan_;
  ProgressSink& progress_;
  Blkhash* const blkhash_;
  SequentialBlkhash* const sequential_;
  Checkpointer* const checkpointer_;
  OrderedChecksum* const checksum_;
  LostRanges* const lost_;
  std::optional<RateLimiter> rate_;  // --rate
  std::atomic<bool> counting_{true};
};

// One loop's view of the books. Thread safety: one thread.
class Bookkeeper {
 public:

  // destination: this loop's own connection (its restarts are watched).
  // opened_mid_copy: it was opened after other loops had written (a worker
  // that starts mid-copy). It may reach a server that restarted since,
  // losing what they wrote and had not flushed, without having seen any
  // loss itself, so a flush on it cannot vouch for their writes: such a
  // loop makes no checkpoint (the first loop's connection, open before
  // any write, does: after a restart its flush meets the loss).
  Bookkeeper(CopyBooks& books, const Endpoint& destination, bool opened_mid_copy = false);
  ~Bookkeeper() { Tell(); }

  // --rate, for a loop that must not block: zero when `length` more bytes
  // may be read now (they are counted), else how long to wait before asking
  // again.
  [[nodiscard]] Clock::duration ReadWait(uint64_t length);
  // --rate, blocking: returns once `length` bytes may be read, or a cancel
  // was asked.
  void AwaitRead(uint64_t length);

  // What a piece notes when it starts, and hands to Done: the destination's
  // epoch (a piece that started before a restart is copied again).
  uint64_t Started() const;

  // `data` of `piece`, read at offset: into the checksums (a piece copied
  // again was hashed the first time), hashed before this returns.
  void Read(const Piece& piece, uint64_t offset, std::span<const std::byte> data);
  // As Read, for a loop that goes on meanwhile: true when the books keep
  // `data` (the plain checksum hashes it in image order, on its own
  // thread) until TakeCompletions hands `tag` back; data must not change
  // until then.
  [[nodiscard]] bool ReadKept(const Piece& piece, uint64_t offset, std::span<const std::byte> data,
                              uint64_t tag);
  // What ReadKept kept and is done with: a descriptor to poll (readable
  // when there is some; -1: never), and the completions (tags as given).
  int poll_fd() const { return returns_ ? returns_->fd() : -1; }
  void TakeCompletions(std::vector<Completion>* completions) {
    if (returns_) returns_->Take(completions);
  }
  // A read of `data` at offset, of `piece`, from `source` failed
  // (`failed`): with --salvage and an unreadable failure
  // (engine/salvage.h), data is read again around what cannot be, which
  // becomes zeroes and a lost range, and OK is returned: the loop goes on
  // with data as read. Otherwise (or when a read while narrowing fails
  // otherwise) a failure, as `failed`. A hash-only piece is never rescued:
  // the destination holds that range from an earlier run, and zeroes in
  // the digest (or a bad area over it in the mapfile) would be false.
  [[nodiscard]] Status Rescue(Endpoint& source, const Piece& piece, uint64_t offset,
                              std::span<std::byte> data, Status failed);
  // A piece that reads as zeroes (kZero, kHashAsZero): into the checksum.
  // REQUIRES piece.offset is a multiple of the checksum's block.
  void Zeroes(const Piece& piece);

  // Every destination operation of [offset, offset + length) of a piece of
  // `kind` (kData, kZero, kCopyAgain) was acknowledged, or none was needed:
  // progress (a piece copied again counted the first time), and the range
  // done for the checkpointer. written: data bytes written there (what a
  // crash would cost to copy again). started: what Started() said.
  void Done(PieceKind kind, uint64_t offset, uint64_t length, uint64_t started, uint64_t written);

  // Between pieces: a checkpoint when one is due, and into `map` what a
  // restart of this loop's destination connection hands back (*again is
  // set when it did). stopping: the copy is ending: no new checkpoint.
  // Cheap when nothing happened. Returns a failed checkpoint.
  [[nodiscard]] Status Between(Endpoint& destination, WorkMap& map, bool stopping, bool* again);
  // For a loop that cannot copy anything again (a stream): fails
  // (CannotCopyAgain) once its destination connection was re-established.
  [[nodiscard]] Status NothingLost(const Endpoint& destination) const;

  // The loop ends: what it gathered is told, then as Between.
  [[nodiscard]] Status AtEnd(Endpoint& destination, WorkMap& map, bool stopping, bool* again);

 private:
  // Tells the checkpointer the run of completions gathered.
  void Tell();
  // The blkhash's part of Read and ReadKept; false for a piece copied
  // again (hashed the first time), which no digest sees twice.
  bool FeedBlkhash(const Piece& piece, uint64_t offset, std::span<const std::byte> data);

  // Completions are told at least every 64 MiB.
  static constexpr uint64_t kMostGathered = 64ULL << 20;

  CopyBooks& books_;
  std::unique_ptr<OrderedChecksum::Returns> returns_;  // with a checksum
  const bool vouches_;           // may make checkpoints (not opened mid-copy)
  uint64_t seen_reconnections_;  // of this loop's destination connection
  uint64_t gathered_offset_ = 0, gathered_length_ = 0, gathered_epoch_ = 0;
  uint64_t gathered_written_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_COPY_BOOKS_H_
