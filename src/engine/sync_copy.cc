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

// A piece of data: read in buffer-sized requests and written as read.
Status CopyData(Endpoint& source, SyncWriter& writer, uint64_t offset, uint64_t length,
                std::span<std::byte> buffer) {
  while (length > 0) {
    std::span<std::byte> chunk = buffer.first(std::min<uint64_t>(length, buffer.size()));
    writer.PaceRead(chunk.size());
    if (CancelRequested()) return CancelledStatus();
    Result<size_t> got = source.Read(offset, chunk);
    ++writer.stats().requests;
    if (!got.ok()) return got.status();
    writer.stats().bytes_read += chunk.size();
    Status status = writer.WriteData(offset, chunk, chunk);
    if (!status.ok()) return status;
    offset += chunk.size();
    length -= chunk.size();
  }
  return Status::Ok();
}

// The front of pieces, cloned, zeroed or copied; pops what it did.
Status CopyFront(Endpoint& source, Endpoint& destination, SyncWriter& writer, CloneRule& clone,
                 std::deque<Extent>& pieces, std::span<std::byte> buffer) {
  if (std::optional<CloneRule::Run> run = clone.Next(pieces)) {
    if (clone.Record(*run, destination.CloneRangeFrom(source, run->offset, run->length))) {
      writer.stats().AddCloned(run->length);
      writer.Done(run->length);
      pieces.erase(pieces.begin(), pieces.begin() + static_cast<ptrdiff_t>(run->pieces));
      return Status::Ok();
    }
  }
  const Extent piece = pieces.front();
  pieces.pop_front();
  if (piece.zero) return writer.ZeroPiece(piece.offset, piece.length);
  return CopyData(source, writer, piece.offset, piece.length, buffer);
}

Status CopySized(const CopyPlan& plan, Endpoint& source, Endpoint& destination, SyncWriter& writer,
                 std::span<std::byte> buffer) {
  WorkMap map(RulesFor(plan, *source.info().size), plan.skip_costly_maps);
  CloneRule clone(plan.clone_data);
  std::deque<Extent> pieces;
  Status status;
  while (status.ok() && map.TakeBatch(source, plan.use_extents, 8 * plan.request_size, &pieces)) {
    while (status.ok() && !pieces.empty()) {
      if (CancelRequested()) {
        status = CancelledStatus();  // the map's statistics still count
        break;
      }
      status = CopyFront(source, destination, writer, clone, pieces, buffer);
    }
  }
  writer.stats().map = map.stats();
  return status;
}

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                ProgressSink& progress, SequentialBlkhash* blkhash, uint64_t* copied,
                CopyStats* stats) {
  CopyStats ignored;
  CopyStats& counted = stats != nullptr ? *stats : ignored;
  counted.workers = 1;
  SyncWriter writer(plan, destination, progress, blkhash, counted);
  std::vector<std::byte> buffer(plan.request_size);
  Status status = source.info().size ? CopySized(plan, source, destination, writer, buffer)
                                     : CopyStream(source, destination, writer, buffer);
  if (copied != nullptr) *copied = writer.copied();
  if (status.ok() && plan.flush) status = destination.Flush();
  return status;
}

}  // namespace nbdcopy
