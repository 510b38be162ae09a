#include "engine/stream_copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "nbdcopy/cancel.h"

namespace nbdcopy {

Status CopyStream(Endpoint& source, Endpoint& destination, SyncWriter& writer, Bookkeeper& books,
                  std::span<std::byte> buffer, uint64_t* length) {
  for (uint64_t offset = 0;;) {
    *length = offset;
    if (CancelRequested()) return CancelledStatus();
    Result<size_t> got = source.Read(offset, buffer);
    ++writer.stats().requests;  // the read that finds the end counts too
    if (!got.ok()) return got.status();
    if (*got == 0) return Status::Ok();
    books.AwaitRead(*got);
    writer.stats().bytes_read += *got;
    const Piece chunk{offset, *got, PieceKind::kData};
    const uint64_t started = books.Started();
    books.Read(chunk, offset, buffer.first(*got));
    // Earlier chunks are whole requests, so whole blocks: only the last pads.
    Result<size_t> stored = PadToDestinationBlock(destination, offset, *got, buffer);
    if (!stored.ok()) return stored.status();
    Status status = writer.WriteRuns(offset, buffer.first(*stored));
    if (!status.ok()) return status;
    if (Status lost = books.NothingLost(destination); !lost.ok()) return lost;
    books.Done(PieceKind::kData, offset, *got, started, *got);
    offset += *got;
  }
}

Result<size_t> PadToDestinationBlock(Endpoint& destination, uint64_t offset, size_t length,
                                     std::span<std::byte> buffer) {
  const EndpointInfo& info = destination.info();
  const uint64_t block = info.min_block_size;
  const uint64_t end = offset + length;
  if (block <= 1 || info.partial_blocks_ok || end % block == 0 || !info.size || end >= *info.size) {
    return length;  // no rule, or the destination's own short tail
  }
  const uint64_t block_start = end - end % block;
  const uint64_t block_end = std::min(block_start + block, *info.size);
  if (block_end - offset > buffer.size()) {
    return Status::Error(
        fmt::format("{}: the stream's last block does not fit the buffer", destination.name()));
  }
  std::vector<std::byte> old(block_end - block_start);
  Result<size_t> got = destination.Read(block_start, old);
  if (!got.ok()) return got.status();
  std::copy(old.begin() + static_cast<ptrdiff_t>(end - block_start), old.end(),
            buffer.begin() + static_cast<ptrdiff_t>(length));
  return static_cast<size_t>(block_end - offset);
}

}  // namespace nbdcopy
