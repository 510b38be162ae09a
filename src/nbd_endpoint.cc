#include "nbdcopy/nbd_endpoint.h"

#include <libnbd.h>

#include <poll.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "nbdcopy/nbd_tls.h"

namespace nbdcopy {

namespace {

constexpr char kBaseAllocation[] = "base:allocation";
// Zero and block-status lengths travel as 32-bit fields; stay well inside.
constexpr uint64_t kMaxZeroLength = 1ULL << 30;
constexpr uint64_t kMaxExtentsLength = 1ULL << 31;

// libnbd's messages may quote a URI whole, password and all.
std::string LibnbdError() {
  const char* message = nbd_get_error();
  return message ? RedactPasswords(message) : "unknown libnbd error";
}

// qemu:dirty-bitmap:NAME flags: bit 0 set = changed since the checkpoint.
constexpr uint32_t kStateDirty = 1;

// One meta context's answer, as extents: base:allocation sets zero, a dirty
// bitmap sets clean.
struct ContextExtents {
  uint64_t offset;  // where the next extent starts
  uint64_t end;
  std::vector<Extent>* out;
  bool dirty_bitmap;

  void Add(const uint32_t* entries, size_t count) {
    for (size_t i = 0; i + 1 < count && offset < end; i += 2) {
      uint64_t length = std::min<uint64_t>(entries[i], end - offset);
      if (length == 0) break;  // No progress: leave the rest undescribed.
      Extent extent{.offset = offset, .length = length};
      if (dirty_bitmap) {
        extent.clean = (entries[i + 1] & kStateDirty) == 0;
      } else {
        extent.zero = (entries[i + 1] & LIBNBD_STATE_ZERO) != 0;
      }
      out->push_back(extent);
      offset += length;
    }
  }
};

struct ExtentCollector {
  ContextExtents allocation;
  ContextExtents dirty;
  const std::string* dirty_context;  // empty: none asked for
};

int CollectExtents(void* user_data, const char* metacontext, uint64_t offset, uint32_t* entries,
                   size_t count, int* error) {
  auto* collector = static_cast<ExtentCollector*>(user_data);
  if (std::strcmp(metacontext, kBaseAllocation) == 0) {
    collector->allocation.Add(entries, count);
  } else if (!collector->dirty_context->empty() && *collector->dirty_context == metacontext) {
    collector->dirty.Add(entries, count);
  }
  return 0;
}

// Combines base:allocation (zero) with a dirty bitmap (clean) over the
// prefix both describe. No allocation answer: all data.
void MergeContexts(uint64_t offset, std::vector<Extent> allocation,
                   const std::vector<Extent>& dirty, std::vector<Extent>* out) {
  const uint64_t dirty_end = dirty.back().offset + dirty.back().length;
  if (allocation.empty()) allocation.push_back(Extent{offset, dirty_end - offset, false});
  const uint64_t end =
      std::min(dirty_end, allocation.back().offset + allocation.back().length);
  size_t a = 0, d = 0;
  for (uint64_t position = offset; position < end;) {
    uint64_t next = std::min({allocation[a].offset + allocation[a].length,
                              dirty[d].offset + dirty[d].length, end});
    out->push_back(Extent{.offset = position,
                          .length = next - position,
                          .zero = allocation[a].zero,
                          .clean = dirty[d].clean});
    position = next;
    if (allocation[a].offset + allocation[a].length == position) ++a;
    if (dirty[d].offset + dirty[d].length == position) ++d;
  }
}

// A failure while creating or connecting a handle: libnbd's own message.
Status SetupError(const std::string& name) {
  return Status::Error(name + ": " + LibnbdError(), nbd_get_errno());
}

// libnbd's debug messages quote URIs whole; pass them on without secrets.
int PrintDebug(void* user_data, const char* context, const char* message) {
  std::fprintf(stderr, "libnbd: debug: %s: %s\n", context, RedactPasswords(message).c_str());
  return 0;
}

}  // namespace

void NbdHandleCloser::operator()(nbd_handle* handle) const {
  if (handle == nullptr) return;
  // A clean disconnect lets the server finish; errors here change nothing.
  nbd_shutdown(handle, 0);
  nbd_close(handle);
}

Result<std::unique_ptr<NbdEndpoint>> NbdEndpoint::Connect(const EndpointSpec& spec, Role role,
                                                          bool debug,
                                                          const std::string& dirty_bitmap) {
  const std::string dirty_context =
      dirty_bitmap.empty() ? std::string() : "qemu:dirty-bitmap:" + dirty_bitmap;
  std::string name = DisplayName(spec);
  NbdHandle handle(nbd_create());
  if (!handle) return SetupError(name);
  nbd_handle* h = handle.get();
  nbd_debug_callback print_debug = {.callback = PrintDebug, .user_data = nullptr, .free = nullptr};
  if (nbd_set_debug(h, debug) == -1 || (debug && nbd_set_debug_callback(h, print_debug) == -1) ||
      nbd_set_handle_name(h, role == Role::kSource ? "src" : "dst") == -1 ||
      nbd_set_uri_allow_local_file(h, true) == -1 ||
      // libnbd would clear every read buffer first; a failed read is never
      // used here, so that memset is pure cost (most of our CPU time).
      nbd_set_pread_initialize(h, false) == -1 ||
      nbd_add_meta_context(h, kBaseAllocation) == -1 ||
      (!dirty_context.empty() && nbd_add_meta_context(h, dirty_context.c_str()) == -1)) {
    return SetupError(name);
  }
  UriTls tls;
  if (spec.kind == EndpointKind::kNbdUri) {
    Result<UriTls> parsed = ParseUriTls(spec.text);
    if (!parsed.ok()) return parsed.status().WithPrefix(name);
    tls = *parsed;
    if (Status files = CheckTlsFiles(tls); !files.ok()) return files.WithPrefix(name);
    // libnbd 1.14 ignores this URI parameter: apply it ourselves.
    if (tls.verify_peer && nbd_set_tls_verify_peer(h, *tls.verify_peer) == -1) {
      return SetupError(name);
    }
  }
  int rc;
  if (spec.kind == EndpointKind::kCommand) {
    std::vector<char*> argv;
    for (const std::string& word : spec.argv) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    rc = nbd_connect_systemd_socket_activation(h, argv.data());
  } else {
    rc = nbd_connect_uri(h, WithoutPassword(spec.text).c_str());
  }
  if (rc == -1) {
    return Status::Error(name + ": " + ExplainConnectFailure(tls, LibnbdError()), nbd_get_errno());
  }

  int64_t size = nbd_get_size(h);
  if (size < 0) return SetupError(name);
  // Before anything else: without the bitmap there is nothing to copy by.
  if (!dirty_context.empty() && nbd_can_meta_context(h, dirty_context.c_str()) != 1) {
    return Status::Error(fmt::format("--dirty-bitmap={}: {}: the server does not offer the "
                                     "meta context {}",
                                     dirty_bitmap, name, dirty_context));
  }
  std::unique_ptr<NbdEndpoint> endpoint(
      new NbdEndpoint(spec, role, debug, dirty_bitmap, std::move(handle)));
  endpoint->dirty_context_ = dirty_context;
  EndpointInfo& info = endpoint->info_;
  info.size = static_cast<uint64_t>(size);
  info.read_only = nbd_is_read_only(h) == 1;
  endpoint->can_zero_ = nbd_can_zero(h) == 1;
  info.efficient_zero = endpoint->can_zero_;
  info.overlapped_io = true;
  info.can_flush = nbd_can_flush(h) == 1;
  // A server started by "[ CMD ]" listens on a socket only libnbd holds.
  info.can_multi_conn = spec.kind != EndpointKind::kCommand && nbd_can_multi_conn(h) == 1;
  // Destinations too: --verify reads them back.
  info.can_extents = nbd_can_meta_context(h, kBaseAllocation) == 1 || !dirty_context.empty();
  // Advertised block sizes (0 when the server says nothing: then it takes
  // any alignment, and requests are bounded only by our own 32M cap).
  int64_t minimum = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
  int64_t preferred = nbd_get_block_size(h, LIBNBD_SIZE_PREFERRED);
  int64_t maximum = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
  if (minimum > 1 && minimum <= (1 << 30)) {
    info.min_block_size = std::bit_ceil(static_cast<uint32_t>(minimum));
  }
  if (preferred >= 512) info.preferred_block_size = static_cast<uint32_t>(preferred);
  info.preferred_block_size = std::max(info.preferred_block_size, info.min_block_size);
  if (maximum > 0 && maximum < UINT32_MAX) info.max_block_size = static_cast<uint32_t>(maximum);
  return endpoint;
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

Status NbdEndpoint::LastError(const char* op, uint64_t offset, uint64_t length) const {
  int error_number = nbd_get_errno();
  return IoError(name_, op, offset, length, LibnbdError(), error_number ? error_number : EIO);
}

Result<size_t> NbdEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  if (WithTailAllowed(offset, buffer.size(), [&] {
        return nbd_pread(handle_.get(), buffer.data(), buffer.size(), offset, 0);
      }) == -1) {
    return LastError("read", offset, buffer.size());
  }
  return buffer.size();
}

Status NbdEndpoint::Write(uint64_t offset, std::span<const std::byte> data) {
  if (WithTailAllowed(offset, data.size(), [&] {
        return nbd_pwrite(handle_.get(), data.data(), data.size(), offset, 0);
      }) == -1) {
    return LastError("write", offset, data.size());
  }
  return Status::Ok();
}

Status NbdEndpoint::Zero(uint64_t offset, uint64_t length, bool allocate) {
  if (!can_zero_) return WriteZeroBytes(*this, offset, length);
  uint32_t flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;
  while (length > 0) {
    uint64_t n = std::min(length, kMaxZeroLength);
    if (WithTailAllowed(offset, n, [&] { return nbd_zero(handle_.get(), n, offset, flags); }) ==
        -1) {
      return LastError("zero", offset, n);
    }
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status NbdEndpoint::Flush() {
  if (!info_.can_flush) return Status::Ok();
  if (nbd_flush(handle_.get(), 0) == -1) {
    return Status::Error(name_ + ": flush: " + LibnbdError(), nbd_get_errno());
  }
  return Status::Ok();
}

Status NbdEndpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
  length = std::min(length, kMaxExtentsLength);
  size_t first = out->size();
  // One request answers both contexts; each answer lands in its own list.
  std::vector<Extent> allocation, dirty;
  ExtentCollector collector{
      .allocation = {offset, offset + length, dirty_context_.empty() ? out : &allocation, false},
      .dirty = {offset, offset + length, &dirty, true},
      .dirty_context = &dirty_context_};
  nbd_extent_callback callback = {.callback = CollectExtents, .user_data = &collector, .free = nullptr};
  if (nbd_block_status(handle_.get(), length, offset, callback, 0) == -1) {
    out->resize(first);
    return LastError("extents", offset, length);
  }
  if (!dirty_context_.empty()) {
    // No bitmap answer would read as "all clean": never guess that.
    if (dirty.empty()) {
      return IoError(name_, "extents", offset, length,
                     "server described nothing for " + dirty_context_, EIO);
    }
    MergeContexts(offset, std::move(allocation), dirty, out);
  }
  if (out->size() == first) {
    return IoError(name_, "extents", offset, length, "server described nothing", EIO);
  }
  return Status::Ok();
}

}  // namespace nbdcopy

namespace nbdcopy {

Result<std::unique_ptr<Endpoint>> NbdEndpoint::Connect() {
  auto other = NbdEndpoint::Connect(spec_, role_, debug_, dirty_bitmap_);
  if (!other.ok()) return other.status();
  return std::unique_ptr<Endpoint>(std::move(other).value());
}

NbdEndpoint::Command* NbdEndpoint::NewCommand(const char* op, uint64_t offset, uint64_t length,
                                              uint64_t tag) {
  if (free_commands_.empty()) {
    commands_.push_back(std::make_unique<Command>());
    free_commands_.push_back(commands_.back().get());
  }
  Command* command = free_commands_.back();
  free_commands_.pop_back();
  *command = Command{this, op, offset, length, tag};
  return command;
}

void NbdEndpoint::Finish(Command* command, int error_number) {
  Status status = Status::Ok();
  if (error_number != 0) {
    status = IoError(name_, command->op, command->offset, command->length,
                     std::strerror(error_number), error_number);
  }
  completions_.push_back(Completion{command->tag, std::move(status)});
  free_commands_.push_back(command);
}

void NbdEndpoint::FailToStart(Command* command) {
  Status status = LastError(command->op, command->offset, command->length);
  completions_.push_back(Completion{command->tag, std::move(status)});
  free_commands_.push_back(command);
}

// Runs inside libnbd, which forbids calls on this handle here: only record.
int NbdEndpoint::OnCommandDone(void* user_data, int* error) {
  auto* command = static_cast<Command*>(user_data);
  command->endpoint->Finish(command, *error);
  return 1;  // retire the command
}

void NbdEndpoint::StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) {
  Command* command = NewCommand("read", offset, buffer.size(), tag);
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  if (WithTailAllowed(offset, buffer.size(), [&] {
        return nbd_aio_pread(handle_.get(), buffer.data(), buffer.size(), offset, done, 0);
      }) == -1) {
    FailToStart(command);
  }
}

void NbdEndpoint::StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) {
  Command* command = NewCommand("write", offset, data.size(), tag);
  nbd_completion_callback done = {.callback = OnCommandDone, .user_data = command, .free = nullptr};
  if (WithTailAllowed(offset, data.size(), [&] {
        return nbd_aio_pwrite(handle_.get(), data.data(), data.size(), offset, done, 0);
      }) == -1) {
    FailToStart(command);
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
  }
}

PollInterest NbdEndpoint::poll_interest() const {
  PollInterest interest;
  interest.fd = nbd_aio_get_fd(handle_.get());
  unsigned direction = nbd_aio_get_direction(handle_.get());
  if (direction & LIBNBD_AIO_DIRECTION_READ) interest.events |= POLLIN;
  if (direction & LIBNBD_AIO_DIRECTION_WRITE) interest.events |= POLLOUT;
  return interest;
}

void NbdEndpoint::OnPollEvents(short revents) {
  // A hang-up or error is reported by the read side of the state machine.
  if (revents & (POLLIN | POLLHUP | POLLERR)) {
    nbd_aio_notify_read(handle_.get());
  } else if (revents & POLLOUT) {
    nbd_aio_notify_write(handle_.get());
  }
}

}  // namespace nbdcopy
