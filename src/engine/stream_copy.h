// The synchronous engine's loop for a source of unknown length (a pipe):
// read until the end, write as read.
#ifndef NBDCOPY_ENGINE_STREAM_COPY_H_
#define NBDCOPY_ENGINE_STREAM_COPY_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/copy_books.h"
#include "engine/sync_writer.h"
#include "nbdcopy/endpoint.h"

namespace nbdcopy {

// Copies the stream into the destination with buffer-sized reads, each
// chunk told to the books as read and done; *length receives the bytes
// copied. Stops between reads once CancelRequested(). A stream cannot be
// read again: a destination whose connection was re-established (--retry)
// may have lost writes, and fails the copy. REQUIRES buffer.size() is a
// multiple of the destination's minimum block size.
[[nodiscard]] Status CopyStream(Endpoint& source, Endpoint& destination, SyncWriter& writer,
                                Bookkeeper& books, std::span<std::byte> buffer, uint64_t* length);

// The stream's last chunk, buffer[0, length) at offset, may end inside a
// block of a destination that takes only whole blocks: reads the rest of
// that block from the destination into the buffer after the chunk, and
// returns how many bytes to store (length when nothing needs padding).
// Fails if the padded chunk would not fit the buffer.
[[nodiscard]] Result<size_t> PadToDestinationBlock(Endpoint& destination, uint64_t offset,
                                                   size_t length, std::span<std::byte> buffer);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_STREAM_COPY_H_
