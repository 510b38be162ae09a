// NbdEndpoint's asynchronous commands: starting them, turning libnbd's
// callbacks into Completions, and the messages of their failures.
#include <libnbd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "endpoints/nbd/nbd_endpoint.h"

namespace nbdcopy {

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

NbdEndpoint::Command* NbdEndpoint::NewCommand(const char* op, uint64_t offset, uint64_t length,
                                              uint64_t tag) {
  if (free_commands_.empty()) {
    commands_.push_back(std::make_unique<Command>());
    free_commands_.push_back(commands_.back().get());
  }
  Command* command = free_commands_.back();
  free_commands_.pop_back();
  command->endpoint = this;
  command->op = op;
  command->offset = offset;
  command->length = length;
  command->tag = tag;
  command->coverage.Reset(offset, length);
  last_heard_ = Clock::now();  // the silence limit counts from the newest request
  return command;
}

void NbdEndpoint::Finish(Command* command, int error_number) {
  Status status = Status::Ok();
  if (error_number != 0) {
    status = OpError(command->op, command->offset, command->length, std::strerror(error_number));
    // libnbd fails every command with ENOTCONN when the connection dies;
    // why it died is known once the libnbd call running us returns.
    if (error_number == ENOTCONN) {
      aborted_.push_back(
          Aborted{completions_.size(), command->op, command->offset, command->length});
    }
  } else if (std::strcmp(command->op, "read") == 0 && !command->coverage.CoveredExactlyOnce()) {
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
  Endpoint::TakeCompletions(out);
}

void NbdEndpoint::ExplainAborted() {
  if (aborted_.empty()) return;
  if (connection_error_.empty()) {
    // Aborted inside a call that returned success (a request whose send
    // found the connection gone): libnbd's last error says why. libnbd
    // 1.14 takes an end of stream between replies for a clean close, with
    // no error message, even with commands outstanding.
    connection_error_ = nbd_aio_is_dead(handle_.get()) == 1 && nbd_get_error() != nullptr
                            ? LibnbdError()
                            : "the server closed the connection";
  }
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

void NbdEndpoint::StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) {
  Command* command = NewCommand("read", offset, buffer.size(), tag);
  nbd_chunk_callback chunk = {.callback = OnReadChunk, .user_data = command, .free = nullptr};
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  if (WithTailAllowed(offset, buffer.size(), [&] {
        return nbd_aio_pread_structured(handle_.get(), buffer.data(), buffer.size(), offset, chunk,
                                        done, 0);
      }) == -1) {
    FailToStart(command);
  } else {
    ExplainAborted();  // a call that succeeded may have found the connection dead
  }
}

void NbdEndpoint::StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) {
  Command* command = NewCommand("write", offset, data.size(), tag);
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  if (WithTailAllowed(offset, data.size(), [&] {
        return nbd_aio_pwrite(handle_.get(), data.data(), data.size(), offset, done, 0);
      }) == -1) {
    FailToStart(command);
  } else {
    ExplainAborted();  // a call that succeeded may have found the connection dead
  }
}

void NbdEndpoint::StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) {
  if (!can_zero_ || length > kMaxZeroLength) {
    Endpoint::StartZero(offset, length, allocate, tag);  // synchronous fallback
    return;
  }
  Command* command = NewCommand("zero", offset, length, tag);
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  uint32_t flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;
  if (WithTailAllowed(offset, length, [&] {
        return nbd_aio_zero(handle_.get(), length, offset, done, flags);
      }) == -1) {
    FailToStart(command);
  } else {
    ExplainAborted();  // a call that succeeded may have found the connection dead
  }
}

}  // namespace nbdcopy
