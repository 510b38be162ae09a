#include "engine/sync_copy.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "engine/buffer_arena.h"
#include "engine/clone_rule.h"
#include "engine/stream_copy.h"
#include "engine/sync_writer.h"
#include "nbdcopy/cancel.h"
#include "plan/work_map.h"

namespace nbdcopy {

namespace {

// A piece that reads (kData, kHashOnly, kCopyAgain), in buffer-sized
// requests: each told to the books as read, and written unless hash-only.
Status CopyReadingPiece(Endpoint& source, SyncWriter& writer, Bookkeeper& books, const Piece& piece,
                        std::span<std::byte> buffer) {
  for (uint64_t offset = piece.offset; offset < piece.end();) {
    std::span<std::byte> chunk =
        buffer.first(std::min<uint64_t>(piece.end() - offset, buffer.size()));
    books.AwaitRead(chunk.size());
    if (CancelRequested()) return CancelledStatus();
    Result<size_t> got = source.Read(offset, chunk);
    ++writer.stats().requests;
    if (!got.ok()) {
      if (Status status = books.Rescue(source, piece, offset, chunk, got.status()); !status.ok()) {
        return status;
      }
    }
    writer.stats().bytes_read += chunk.size();
    books.Read(piece, offset, chunk);
    if (piece.kind != PieceKind::kHashOnly) {
      if (Status status = writer.WriteRuns(offset, chunk); !status.ok()) return status;
    }
    offset += chunk.size();
  }
  return Status::Ok();
}

// The front of pieces: cloned, zeroed, hashed or copied, and told to the
// books; pops what it did.
Status CopyFront(Endpoint& source, Endpoint& destination, SyncWriter& writer, Bookkeeper& books,
                 CloneRule& clone, std::deque<Piece>& pieces, std::span<std::byte> buffer) {
  const uint64_t started = books.Started();
  if (std::optional<CloneRule::Run> run = clone.Next(pieces)) {
    if (clone.Record(*run, destination.CloneRangeFrom(source, run->offset, run->length))) {
      writer.stats().AddCloned(run->length);
      books.Done(pieces.front().kind, run->offset, run->length, started, 0);
      pieces.erase(pieces.begin(), pieces.begin() + static_cast<ptrdiff_t>(run->pieces));
      return Status::Ok();
    }
  }
  const Piece piece = pieces.front();
  pieces.pop_front();
  if (!piece.reads()) {
    books.Zeroes(piece);
    if (piece.kind == PieceKind::kHashAsZero) return Status::Ok();
    Status status = writer.ZeroPiece(piece.offset, piece.length);
    if (status.ok()) books.Done(piece.kind, piece.offset, piece.length, started, 0);
    return status;
  }
  Status status = CopyReadingPiece(source, writer, books, piece, buffer);
  if (status.ok() && piece.kind != PieceKind::kHashOnly) {
    books.Done(piece.kind, piece.offset, piece.length, started, piece.length);
  }
  return status;
}

Status CopySized(const CopyPlan& plan, Endpoint& source, Endpoint& destination, SyncWriter& writer,
                 CopyBooks& shared_books, std::span<std::byte> buffer) {
  if (Status status = CheckFinishedFor(plan, source); !status.ok()) return status;
  WorkMap map(plan.rules, plan.skip_costly_maps, plan.coverage.get());
  Bookkeeper books(shared_books, destination);
  CloneRule clone(plan.clone_data);
  std::deque<Piece> pieces;
  Status status;
  bool again = false;
  do {
    while (status.ok() && map.TakeBatch(source, plan.use_extents, plan.batch_size, &pieces)) {
      while (status.ok() && !pieces.empty()) {
        if (CancelRequested()) {
          status = CancelledStatus();  // the map's statistics still count
          break;
        }
        status = CopyFront(source, destination, writer, books, clone, pieces, buffer);
        bool more = false;  // (the map holds it: the loop goes on)
        if (status.ok()) status = books.Between(destination, map, false, &more);
      }
    }
    // The last checkpoint is the flush; after a failure or a signal it
    // keeps what is durable (its own failure then says nothing new).
    bool more = false;
    Status end = books.AtEnd(destination, map, !status.ok(), &more);
    if (status.ok()) status = end;
    Status last = shared_books.EndRound(destination, &map, !status.ok(), &again);
    if (status.ok()) status = last;
  } while (status.ok() && (again || map.has_copy_again()));
  writer.stats().map = map.stats();
  return status;
}

}  // namespace

Status SyncCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination, CopyBooks& books,
                uint64_t* copied, CopyStats* stats) {
  CopyStats ignored;
  CopyStats& counted = stats != nullptr ? *stats : ignored;
  counted.workers = 1;
  SyncWriter writer(plan, destination, counted);
  // From an arena: page-aligned, so a block device's direct writes take it
  // as it is (a vector's bytes sent every write through the bounce buffer),
  // and in huge pages when large.
  BufferArena arena(plan.request_size, 1);
  const std::span<std::byte> buffer(arena.Take(plan.request_size), plan.request_size);
  if (source.info().size) {
    if (copied != nullptr) *copied = *source.info().size;
    return CopySized(plan, source, destination, writer, books, buffer);
  }
  uint64_t length = 0;
  Status status;
  {
    Bookkeeper stream_books(books, destination);
    status = CopyStream(source, destination, writer, stream_books, buffer, &length);
  }  // (tells what it gathered)
  if (copied != nullptr) *copied = length;
  bool again = false;
  Status last = books.EndRound(destination, nullptr, !status.ok(), &again);
  return status.ok() ? last : status;
}

}  // namespace nbdcopy
