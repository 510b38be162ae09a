// NbdEndpoint's synchronous calls, each one asynchronous command waited
// for: so the silence limit and the reply checks of the asynchronous path
// apply to them as well.
#include <libnbd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "endpoints/nbd/nbd_endpoint.h"
#include "endpoints/nbd/nbd_extents.h"

namespace nbdcopy {

namespace {

// The tag of the one synchronous operation at a time; the engines' tags
// are small slot numbers.
constexpr uint64_t kSyncTag = std::numeric_limits<uint64_t>::max();

}  // namespace

template <typename Start>
Status NbdEndpoint::AwaitSync(Start start) {
  start();
  for (bool alive = true;; alive = PollOnce()) {
    ExplainAborted();
    auto done = std::find_if(completions_.begin(), completions_.end(),
                             [](const Completion& c) { return c.tag == kSyncTag; });
    if (done != completions_.end()) {
      Status status = std::move(done->status);
      completions_.erase(done);
      return status;
    }
    if (!alive && nbd_aio_in_flight(handle_.get()) <= 0) {
      // Dead, and libnbd has no command left to fail: ours is lost.
      return Status::Error(name_ + ": " + connection_error_);
    }
  }
}

Result<size_t> NbdEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  Status status = AwaitSync([&] { StartRead(offset, buffer, kSyncTag); });
  if (!status.ok()) return status;
  return buffer.size();
}

Status NbdEndpoint::Write(uint64_t offset, std::span<const std::byte> data) {
  return AwaitSync([&] { StartWrite(offset, data, kSyncTag); });
}

Status NbdEndpoint::Zero(uint64_t offset, uint64_t length, bool allocate) {
  if (!info_.efficient_zero) return WriteZeroBytes(*this, offset, length);
  while (length > 0) {
    uint64_t n = std::min(length, kMaxZeroLength);
    Status status = AwaitSync([&] { StartZero(offset, n, allocate, kSyncTag); });
    if (!status.ok()) return status;
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status NbdEndpoint::Flush() {
  if (!info_.can_flush) return Status::Ok();
  return AwaitSync([&] { Issue(NewCommand(Op::kFlush, "flush", 0, 0, kSyncTag)); });
}

Status NbdEndpoint::BlockStatus(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  // One request answers both contexts, when a dirty bitmap was asked for.
  BlockStatusReply reply(offset, length, dirty_context_);
  Status status = AwaitSync([&] {
    Command* command = NewCommand(Op::kExtents, "extents", offset, length, kSyncTag);
    command->buffer = &reply;
    Issue(command);
  });
  if (!status.ok()) return status;
  if (!std::move(reply).Finish(out)) {
    return IoError(name_, "extents", offset, length,
                   "server described nothing for " + dirty_context_);
  }
  return Status::Ok();
}

Status NbdEndpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
  return DescribeExtents(
      name_, offset, length, WideBlockStatus() ? kMaxWideExtentsLength : kMaxExtentsLength,
      [this](uint64_t position, uint64_t left, std::vector<Extent>* described) {
        return BlockStatus(position, left, described);
      },
      out);
}

}  // namespace nbdcopy
