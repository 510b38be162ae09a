#include "engine/sync_copy.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "engine/clone_rule.h"
#include "engine/stream_copy.h"
#include "engine/sync_writer.h"
#include "nbdcopy/cancel.h"
#include "plan/work_map.h"

namespace nbdcopy {

namespace {

// A piece of data: read in buffer-sized requests and written as read
// (a skipped range only hashed; a range copied again not hashed).
Status CopyData(Endpoint& source, SyncWriter& writer, const Extent& piece,
                std::span<std::byte> buffer) {
  uint64_t offset = piece.offset;
  uint64_t length = piece.length;
  while (length > 0) {
    std::span<std::byte> chunk = buffer.first(std::min<uint64_t>(length, buffer.size()));
    writer.PaceRead(chunk.size());
    if (CancelRequested()) return CancelledStatus();
    Result<size_t> got = source.Read(offset, chunk);
    ++writer.stats().requests;
    if (!got.ok()) return got.status();
    writer.stats().bytes_read += chunk.size();
    Status status = piece.clean  ? (writer.HashOnly(chunk), Status::Ok())
                    : piece.redo ? writer.Rewrite(offset, chunk)
                                 : writer.WriteData(offset, chunk, chunk);
    if (!status.ok()) return status;
    offset += chunk.size();
    length -= chunk.size();
  }
  return Status::Ok();
}

// The front of pieces, cloned, zeroed or copied; pops what it did and
// reports it done to the checkpointer (if any).
Status CopyFront(Endpoint& source, Endpoint& destination, SyncWriter& writer, CloneRule& clone,
                 std::deque<Extent>& pieces, std::span<std::byte> buffer,
                 Checkpointer* checkpointer) {
  const uint64_t epoch = checkpointer != nullptr ? checkpointer->epoch() : 0;
  if (std::optional<CloneRule::Run> run = clone.Next(pieces)) {
    if (clone.Record(*run, destination.CloneRangeFrom(source, run->offset, run->length))) {
      writer.stats().AddCloned(run->length);
      writer.Done(run->length);
      pieces.erase(pieces.begin(), pieces.begin() + static_cast<ptrdiff_t>(run->pieces));
      if (checkpointer != nullptr) checkpointer->Completed(run->offset, run->length, epoch, 0);
      return Status::Ok();
    }
  }
  const Extent piece = pieces.front();
  pieces.pop_front();
  if (piece.clean && piece.zero) {
    writer.HashZeroesOnly(piece.length);
    return Status::Ok();
  }
  Status status = piece.zero ? writer.ZeroPiece(piece.offset, piece.length)
                             : CopyData(source, writer, piece, buffer);
  if (status.ok() && checkpointer != nullptr && !piece.clean) {
    checkpointer->Completed(piece.offset, piece.length, epoch, piece.zero ? 0 : piece.length);
  }
  return status;
}

// Between pieces: a checkpoint when due; after the destination connection
// was re-established, the ranges to copy again go back to the map.
Status Checkpoint(Checkpointer& checkpointer, Endpoint& destination, WorkMap& map,
                  uint64_t* reconnections, bool final) {
  // A loss first: a flush after it must not vouch for what it lost.
  map.Redo(checkpointer.ToCopyAgain(destination, reconnections));
  if (!final && !checkpointer.Due()) return Status::Ok();
  Status status = checkpointer.Checkpoint(destination);
  // A loss the flush itself met (the last checkpoint leaves it for
  // another round).
  map.Redo(checkpointer.ToCopyAgain(destination, reconnections));
  return status;
}

Status CopySized(const CopyPlan& plan, Endpoint& source, Endpoint& destination, SyncWriter& writer,
                 std::span<std::byte> buffer, Checkpointer* checkpointer) {
  WorkMap map(RulesFor(plan, *source.info().size), plan.skip_costly_maps, plan.skip_ranges.get());
  CloneRule clone(plan.clone_data);
  std::deque<Extent> pieces;
  uint64_t reconnections = destination.reconnections();
  Status status;
  do {
    while (status.ok() && map.TakeBatch(source, plan.use_extents, 8 * plan.request_size, &pieces)) {
      while (status.ok() && !pieces.empty()) {
        if (CancelRequested()) {
          status = CancelledStatus();  // the map's statistics still count
          break;
        }
        status = CopyFront(source, destination, writer, clone, pieces, buffer, checkpointer);
        if (status.ok() && checkpointer != nullptr) {
          status = Checkpoint(*checkpointer, destination, map, &reconnections, false);
        }
      }
    }
    if (checkpointer == nullptr) break;
    // The last checkpoint is the flush; after a failure or a signal it
    // keeps what is durable (its own failure then says nothing new).
    Status last = Checkpoint(*checkpointer, destination, map, &reconnections, true);
    if (status.ok()) status = last;
  } while (status.ok() && map.has_redo());
  writer.stats().map = map.stats();
  return status;
}

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                ProgressSink& progress, SequentialBlkhash* blkhash, uint64_t* copied,
                CopyStats* stats, Checkpointer* checkpointer) {
  CopyStats ignored;
  CopyStats& counted = stats != nullptr ? *stats : ignored;
  counted.workers = 1;
  SyncWriter writer(plan, destination, progress, blkhash, counted);
  std::vector<std::byte> buffer(plan.request_size);
  Status status = source.info().size
                      ? CopySized(plan, source, destination, writer, buffer, checkpointer)
                      : CopyStream(source, destination, writer, buffer);
  if (copied != nullptr) *copied = writer.copied();
  // A checkpointer's last checkpoint was the flush.
  if (status.ok() && plan.flush && checkpointer == nullptr) status = destination.Flush();
  return status;
}

}  // namespace nbdcopy
