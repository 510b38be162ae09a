// Streams (stdin/stdout, FIFOs, character devices): strictly sequential.
#include "endpoints/pipe_endpoint.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "nbdcopy/cancel.h"

namespace nbdcopy {

PipeEndpoint::PipeEndpoint(std::string name, UniqueFd fd)
    : name_(std::move(name)), fd_(std::move(fd)) {
  info_.ops_name = "pipe_ops";
  info_.sequential = true;
  info_.preferred_block_size = 4096;
}

Result<size_t> PipeEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  if (offset != position_) {
    return IoError(name_, "read", offset, buffer.size(), "non-sequential read from a stream");
  }
  size_t done = 0;
  while (done < buffer.size()) {
    // A signal that interrupts a transfer part-way makes it return short,
    // not EINTR: look for a cancel before blocking again.
    if (CancelRequested()) return CancelledStatus();
    ssize_t n = read(fd_.get(), buffer.data() + done, buffer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(name_, "read", offset, buffer.size(), errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  position_ += done;
  return done;
}

Status PipeEndpoint::Write(uint64_t offset, std::span<const std::byte> data) {
  if (offset > position_) {
    // A range the caller skipped must still appear in the stream.
    Status status = WriteZeroBytes(*this, position_, offset - position_);
    if (!status.ok()) return status;
  }
  if (offset != position_) {
    return IoError(name_, "write", offset, data.size(), "non-sequential write to a stream");
  }
  size_t done = 0;
  while (done < data.size()) {
    // A signal that interrupts a transfer part-way makes it return short,
    // not EINTR: look for a cancel before blocking again.
    if (CancelRequested()) return CancelledStatus();
    ssize_t n = write(fd_.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(name_, "write", offset, data.size(), errno);
    done += static_cast<size_t>(n);
  }
  position_ += done;
  return Status::Ok();
}

Status PipeEndpoint::Zero(uint64_t offset, uint64_t length, bool allocate) {
  return WriteZeroBytes(*this, offset, length);
}

}  // namespace nbdcopy
