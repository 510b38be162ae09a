// NbdEndpoint's asynchronous commands: starting them, turning libnbd's
// callbacks into Completions, and the messages of their failures.
#include <libnbd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "endpoints/nbd/nbd_endpoint.h"
#include "endpoints/nbd/nbd_extents.h"

namespace nbdcopy {

namespace {

// libnbd's block-status callback: runs inside libnbd, records only.
int CollectExtents(void* user_data, const char* metacontext, uint64_t offset, uint32_t* entries,
                   size_t count, int* error) {
  static_cast<BlockStatusReply*>(user_data)->AddChunk(metacontext, {entries, count});
  return 0;
}

#ifdef LIBNBD_HAVE_NBD_AIO_BLOCK_STATUS_64
static_assert(sizeof(nbd_extent) == sizeof(BlockStatusEntry) &&
              offsetof(nbd_extent, length) == offsetof(BlockStatusEntry, length) &&
              offsetof(nbd_extent, flags) == offsetof(BlockStatusEntry, flags));

// The same for a wide reply (extended headers).
int CollectWideExtents(void* user_data, const char* metacontext, uint64_t offset,
                       nbd_extent* entries, size_t count, int* error) {
  static_cast<BlockStatusReply*>(user_data)->AddChunk(
      metacontext, {reinterpret_cast<const BlockStatusEntry*>(entries), count});
  return 0;
}
#endif

}  // namespace

Status NbdEndpoint::OpError(const char* op, uint64_t offset, uint64_t length,
                            const std::string& why) const {
  if (std::strcmp(op, "flush") == 0) return Status::Error(name_ + ": flush: " + why);
  return IoError(name_, op, offset, length, why);
}

Status NbdEndpoint::LastError(const char* op, uint64_t offset, uint64_t length) const {
  // Once the connection is dead every call fails "invalid state: DEAD";
  // the reason it died is what the user needs.
  if (!connection_error_.empty()) {
    return OpError(op, offset, length, connection_error_);
  }
  return OpError(op, offset, length, LibnbdError());
}

bool NbdEndpoint::WideBlockStatus() const {
#if defined(LIBNBD_HAVE_NBD_GET_EXTENDED_HEADERS_NEGOTIATED) && \
    defined(LIBNBD_HAVE_NBD_AIO_BLOCK_STATUS_64)
  return nbd_get_extended_headers_negotiated(handle_.get()) == 1;
#else
  return false;
#endif
}

bool NbdEndpoint::IsShortTail(uint64_t offset, uint64_t length) const {
  return info_.min_block_size > 1 && offset + length == *info_.size &&
         length % info_.min_block_size != 0;
}

template <typename Call>
int NbdEndpoint::WithTailAllowed(uint64_t offset, uint64_t length, Call start) {
  if (!IsShortTail(offset, length)) return start();
  nbd_handle* h = handle_.get();
  uint32_t mode = nbd_get_strict_mode(h);
  nbd_set_strict_mode(h, mode & ~LIBNBD_STRICT_ALIGN);
  int rc = start();
  nbd_set_strict_mode(h, mode);
  return rc;
}

NbdEndpoint::Command* NbdEndpoint::NewCommand(Op kind, const char* op, uint64_t offset,
                                              uint64_t length, uint64_t tag) {
  if (free_commands_.empty()) {
    commands_.push_back(std::make_unique<Command>());
    free_commands_.push_back(commands_.back().get());
  }
  Command* command = free_commands_.back();
  free_commands_.pop_back();
  command->endpoint = this;
  command->kind = kind;
  command->op = op;
  command->buffer = nullptr;
  command->flags = 0;
  command->offset = offset;
  command->length = length;
  command->tag = tag;
  command->coverage.Reset(offset, length);
  last_heard_ = Clock::now();  // the silence limit counts from the newest request
  return command;
}

void NbdEndpoint::Finish(Command* command, int error_number) {
  // Errors a dropped connection gives what was in flight (libnbd's
  // ENOTCONN; the send's own errno): whether the connection died is known
  // only once the libnbd call running us returns (Recover), so they wait.
  const bool maybe_lost = error_number == ENOTCONN || error_number == ESHUTDOWN ||
                          error_number == ECONNRESET || error_number == EPIPE;
  if (maybe_lost && command->kind != Op::kExtents && MayReconnect()) {
    command->error = error_number;
    lost_.push_back(command);
    return;
  }
  Complete(command, error_number);
}

void NbdEndpoint::Complete(Command* command, int error_number) {
  if (error_number == 0) failed_attempts_ = 0;  // the connection carries requests
  Status status = Status::Ok();
  if (error_number != 0) {
    status = Status::ErrorWithErrno(
        OpError(command->op, command->offset, command->length, std::strerror(error_number))
            .message(),
        error_number);
    // libnbd fails every command with ENOTCONN when the connection dies;
    // why it died is known once the libnbd call running us returns.
    if (error_number == ENOTCONN) {
      aborted_.push_back(
          Aborted{completions_.size(), command->op, command->offset, command->length});
    }
  } else if (command->kind == Op::kRead && !command->coverage.CoveredExactlyOnce()) {
    // libnbd 1.14 accepts a reply that leaves part of the buffer unfilled:
    // that part would be copied as whatever the buffer held before.
    status = OpError(command->op, command->offset, command->length,
                     "the server's reply did not cover the range exactly once");
  }
  completions_.push_back(Completion{command->tag, std::move(status)});
  free_commands_.push_back(command);
}

void NbdEndpoint::FailToStart(Command* command) {
  nbd_handle* h = handle_.get();
  if (command->kind != Op::kExtents && MayReconnect() &&
      (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1)) {
    command->error = ENOTCONN;
    lost_.push_back(command);  // the connection died before this call
    Recover();
    return;
  }
  if (connection_error_.empty()) {
    if (nbd_get_errno() == EINVAL && (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1)) {
      // The connection died before this call (the server hung up): libnbd
      // refuses the call for its state ("invalid state: DEAD"), which says
      // nothing to the user.
      connection_error_ = "the server closed the connection";
    } else if (!aborted_.empty()) {
      // This call killed the connection, failing others too.
      connection_error_ = LibnbdError();
    }
  }
  Status status = LastError(command->op, command->offset, command->length);
  completions_.push_back(Completion{command->tag, std::move(status)});
  free_commands_.push_back(command);
  ExplainAborted();
}

void NbdEndpoint::TakeCompletions(std::vector<Completion>* out) {
  ExplainAborted();
  Recover();
  Endpoint::TakeCompletions(out);
}

void NbdEndpoint::NoteDeathReason() {
  if (!connection_error_.empty()) return;
  // Commands failed inside a call that returned success (a request whose
  // send found the connection gone): libnbd's last error says why. libnbd
  // 1.14 takes an end of stream between replies for a clean close, with no
  // error message, even with commands outstanding.
  connection_error_ = nbd_aio_is_dead(handle_.get()) == 1 && nbd_get_error() != nullptr
                          ? LibnbdError()
                          : "the server closed the connection";
}

void NbdEndpoint::ExplainAborted() {
  if (aborted_.empty()) return;
  NoteDeathReason();
  for (const Aborted& aborted : aborted_) {
    completions_[aborted.index].status =
        OpError(aborted.op, aborted.offset, aborted.length, connection_error_);
  }
  aborted_.clear();
}

// Runs inside libnbd, which forbids calls on this handle here: only record.
int NbdEndpoint::OnCommandDone(void* user_data, int* error) {
  auto* command = static_cast<Command*>(user_data);
  command->endpoint->Finish(command, *error);
  return 1;  // retire the command
}

// libnbd has checked that the chunk lies inside the request; whether the
// chunks cover it exactly once is ours to check (Finish). Error chunks
// fill nothing.
int NbdEndpoint::OnReadChunk(void* user_data, const void* data, size_t count, uint64_t offset,
                             unsigned status, int* error) {
  auto* command = static_cast<Command*>(user_data);
  if (status != LIBNBD_READ_DATA && status != LIBNBD_READ_HOLE) return 0;
  command->coverage.AddChunk(offset, count);
  return 0;
}

void NbdEndpoint::Issue(Command* command) {
  nbd_handle* h = handle_.get();
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  const uint64_t offset = command->offset;
  const uint64_t length = command->length;
  command->coverage.Reset(offset, length);
  int rc = -1;
  switch (command->kind) {
    case Op::kRead: {
      nbd_chunk_callback chunk = {.callback = OnReadChunk, .user_data = command, .free = nullptr};
      rc = WithTailAllowed(offset, length, [&] {
        return nbd_aio_pread_structured(h, command->buffer, length, offset, chunk, done, 0);
      });
      break;
    }
    case Op::kWrite:
      rc = WithTailAllowed(offset, length, [&] {
        return nbd_aio_pwrite(h, command->buffer, length, offset, done, 0);
      });
      break;
    case Op::kZero:
      rc = WithTailAllowed(offset, length,
                           [&] { return nbd_aio_zero(h, length, offset, done, command->flags); });
      break;
    case Op::kFlush:
      rc = nbd_aio_flush(h, done, 0);
      break;
    case Op::kExtents: {
#ifdef LIBNBD_HAVE_NBD_AIO_BLOCK_STATUS_64
      if (WideBlockStatus()) {
        nbd_extent64_callback extents = {
            .callback = CollectWideExtents, .user_data = command->buffer, .free = nullptr};
        rc = nbd_aio_block_status_64(h, length, offset, extents, done, 0);
        break;
      }
#endif
      nbd_extent_callback extents = {
          .callback = CollectExtents, .user_data = command->buffer, .free = nullptr};
      rc = nbd_aio_block_status(h, length, offset, extents, done, 0);
      break;
    }
  }
  if (rc == -1) {
    FailToStart(command);
  } else {
    ExplainAborted();  // a call that succeeded may have found the connection dead
    Recover();
  }
}

void NbdEndpoint::StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) {
  Command* command = NewCommand(Op::kRead, "read", offset, buffer.size(), tag);
  command->buffer = buffer.data();
  Issue(command);
}

void NbdEndpoint::StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) {
  Command* command = NewCommand(Op::kWrite, "write", offset, data.size(), tag);
  command->buffer = const_cast<std::byte*>(data.data());  // only ever read
  Issue(command);
}

void NbdEndpoint::StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) {
  if (!info_.efficient_zero || length > kMaxZeroLength) {
    Endpoint::StartZero(offset, length, allocate, tag);  // synchronous fallback
    return;
  }
  Command* command = NewCommand(Op::kZero, "zero", offset, length, tag);
  command->flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;
  Issue(command);
}

}  // namespace nbdcopy
