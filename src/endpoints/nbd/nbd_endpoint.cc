#include "endpoints/nbd/nbd_endpoint.h"

#include <fmt/format.h>
#include <libnbd.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "nbdcopy/cancel.h"
#include "endpoints/nbd/nbd_tls.h"

namespace nbdcopy {

namespace {

constexpr char kBaseAllocation[] = "base:allocation";
// Block-status lengths travel as 32-bit fields; stay well inside.
constexpr uint64_t kMaxExtentsLength = 1ULL << 31;
// A server may describe a range a little at a time. Ask again a few times;
// then whatever of kMinDescribed is still undescribed is data, so that a
// server describing a few bytes per reply cannot make every request tiny.
constexpr int kExtentsRounds = 16;
constexpr uint64_t kMinDescribed = 1ULL << 20;
// The tag of the one synchronous operation at a time; the engines' tags
// are small slot numbers.
constexpr uint64_t kSyncTag = std::numeric_limits<uint64_t>::max();
// How long the server may take to hang up after NBD_CMD_DISC.
constexpr unsigned kDisconnectSeconds = 5;

// Appends an extent, merged into a like predecessor at index first or later.
void AddExtent(std::vector<Extent>* out, size_t first, const Extent& extent) {
  if (out->size() > first && out->back().zero == extent.zero && out->back().clean == extent.clean) {
    out->back().length += extent.length;
  } else {
    out->push_back(extent);
  }
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
  size_t first = out->size();  // out's size before this request
  bool answered = false;       // a reply chunk for this context came

  void Add(const uint32_t* entries, size_t count) {
    // Each chunk describes the range from its start: a second one for the
    // same context (a protocol violation) would be read as continuing.
    if (std::exchange(answered, true)) return;
    for (size_t i = 0; i + 1 < count && offset < end; i += 2) {
      uint64_t length = std::min<uint64_t>(entries[i], end - offset);
      if (length == 0) break;  // No progress: leave the rest undescribed.
      Extent extent{.offset = offset, .length = length};
      if (dirty_bitmap) {
        extent.clean = (entries[i + 1] & kStateDirty) == 0;
      } else {
        extent.zero = (entries[i + 1] & LIBNBD_STATE_ZERO) != 0;
      }
      AddExtent(out, first, extent);
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
  const uint64_t end = std::min(dirty_end, allocation.back().offset + allocation.back().length);
  size_t a = 0, d = 0;
  for (uint64_t position = offset; position < end;) {
    uint64_t next = std::min(
        {allocation[a].offset + allocation[a].length, dirty[d].offset + dirty[d].length, end});
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

// libnbd's messages may quote a URI whole, password and all.
std::string LibnbdError() {
  const char* message = nbd_get_error();
  return message ? RedactPasswords(message) : "unknown libnbd error";
}

void NbdHandleCloser::operator()(nbd_handle* handle) const {
  if (handle != nullptr) nbd_close(handle);
}

Result<std::unique_ptr<NbdEndpoint>> NbdEndpoint::Connect(const EndpointSpec& spec, Role role,
                                                          bool debug,
                                                          const std::string& dirty_bitmap,
                                                          unsigned timeout_seconds) {
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
      // used here, and a read the server did not fill fails (Covered()),
      // so that memset is pure cost (most of our CPU time).
      nbd_set_pread_initialize(h, false) == -1 || nbd_add_meta_context(h, kBaseAllocation) == -1 ||
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
    rc = nbd_aio_connect_systemd_socket_activation(h, argv.data());
  } else {
    rc = nbd_aio_connect_uri(h, WithoutPassword(spec.text).c_str());
  }
  if (rc == -1) {
    return Status::Error(name + ": " + ExplainConnectFailure(tls, LibnbdError()), nbd_get_errno());
  }
  std::unique_ptr<NbdEndpoint> endpoint(
      new NbdEndpoint(spec, role, debug, dirty_bitmap, timeout_seconds, std::move(handle)));
  endpoint->dirty_context_ = dirty_context;
  if (!endpoint->FinishConnecting()) {
    const std::string& why = endpoint->connection_error_;
    return Status::Error(
        name + ": " + ExplainConnectFailure(tls, why.empty() ? LibnbdError() : why), ECONNABORTED);
  }

  int64_t size = nbd_get_size(h);
  // libnbd 1.14 hands a size of 2^63 or more on as a negative number.
  if (size < 0) return Status::Error(name + ": the server's export size is larger than 2^63-1");
  // Before anything else: without the bitmap there is nothing to copy by.
  if (!dirty_context.empty() && nbd_can_meta_context(h, dirty_context.c_str()) != 1) {
    return Status::Error(
        fmt::format("--dirty-bitmap={}: {}: the server does not offer the "
                    "meta context {}",
                    dirty_bitmap, name, dirty_context));
  }
  EndpointInfo& info = endpoint->info_;
  info.ops_name = "nbd_ops";
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

bool NbdEndpoint::FinishConnecting() {
  last_heard_ = Clock::now();
  while (nbd_aio_is_connecting(handle_.get()) == 1 || nbd_aio_is_negotiating(handle_.get()) == 1) {
    if (!PollOnce()) return false;
  }
  return nbd_aio_is_ready(handle_.get()) == 1;
}

NbdEndpoint::~NbdEndpoint() {
  // A clean disconnect lets the server finish (qemu-nbd exits after its
  // last client), but a silent server must not keep us: the same limit.
  nbd_handle* h = handle_.get();
  if (nbd_aio_is_ready(h) == 1 && nbd_aio_disconnect(h, 0) == 0) {
    disconnecting_ = true;
    last_heard_ = Clock::now();
    while (nbd_aio_is_closed(h) != 1 && PollOnce()) {
    }
  }
}

Status NbdEndpoint::OpError(const char* op, uint64_t offset, uint64_t length,
                            const std::string& why, int error_number) const {
  if (std::strcmp(op, "flush") == 0) {
    return Status::Error(name_ + ": flush: " + why, error_number);
  }
  return IoError(name_, op, offset, length, why, error_number);
}

Status NbdEndpoint::LastError(const char* op, uint64_t offset, uint64_t length) const {
  // Once the connection is dead every call fails "invalid state: DEAD";
  // the reason it died is what the user needs.
  if (!connection_error_.empty()) {
    return OpError(op, offset, length, connection_error_, ECONNABORTED);
  }
  int error_number = nbd_get_errno();
  return OpError(op, offset, length, LibnbdError(), error_number ? error_number : EIO);
}

// (State questions only: a call refused in this state, nbd_aio_in_flight
// during the handshake for one, would overwrite libnbd's last error.)
bool NbdEndpoint::Waiting() const {
  nbd_handle* h = handle_.get();
  if (disconnecting_ || nbd_aio_is_processing(h) == 1) return true;
  // "Ready" includes waiting for replies to commands already sent.
  if (nbd_aio_is_ready(h) == 1) return nbd_aio_in_flight(h) > 0;
  return nbd_aio_is_created(h) != 1 && nbd_aio_is_dead(h) != 1 &&
         nbd_aio_is_closed(h) != 1;  // the handshake
}

int NbdEndpoint::MillisecondsLeft() const {
  unsigned limit = timeout_;
  // Past the disconnect everything is done, and after a signal the user
  // wants out: a server that stays silent then costs seconds, not the
  // whole silence limit (nor forever, with --timeout=0).
  if ((disconnecting_ || CancelRequested()) && (limit == 0 || limit > kDisconnectSeconds)) {
    limit = kDisconnectSeconds;
  }
  if (!Waiting()) return -1;
  // Waking now and then notices a signal that another thread caught.
  constexpr int kRecheckMs = 1000;
  if (limit == 0) return kRecheckMs;
  auto left = last_heard_ + std::chrono::seconds(limit) - Clock::now();
  return static_cast<int>(std::clamp<int64_t>(
      std::chrono::ceil<std::chrono::milliseconds>(left).count(), 0, kRecheckMs));
}

PollInterest NbdEndpoint::poll_interest() const {
  PollInterest interest;
  interest.fd = nbd_aio_get_fd(handle_.get());
  unsigned direction = nbd_aio_get_direction(handle_.get());
  if (direction & LIBNBD_AIO_DIRECTION_READ) interest.events |= POLLIN;
  if (direction & LIBNBD_AIO_DIRECTION_WRITE) interest.events |= POLLOUT;
  interest.timeout_ms = MillisecondsLeft();
  return interest;
}

void NbdEndpoint::OnPollEvents(short revents) {
  nbd_handle* h = handle_.get();
  int rc = 0;
  // A hang-up or error is reported by the read side of the state machine.
  if (revents & (POLLIN | POLLHUP | POLLERR)) {
    rc = nbd_aio_notify_read(h);
  } else if (revents & POLLOUT) {
    rc = nbd_aio_notify_write(h);
  }
  if (revents != 0) {
    last_heard_ = Clock::now();
  } else if (MillisecondsLeft() == 0) {
    Abandon();
  }
  if (rc == -1 && connection_error_.empty()) connection_error_ = LibnbdError();
  ExplainAborted();
}

void NbdEndpoint::Abandon() {
  nbd_handle* h = handle_.get();
  connection_error_ = disconnecting_
                          ? std::string("the server did not hang up after the disconnect")
                          : fmt::format("the server sent nothing for {} second{} (see --timeout)",
                                        timeout_, timeout_ == 1 ? "" : "s");
  // libnbd has no call to drop a connection; ending the socket makes it
  // see the end of the stream, fail every command and turn dead.
  int fd = nbd_aio_get_fd(h);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
  for (int i = 0; i < 4 && nbd_aio_is_dead(h) != 1 && nbd_aio_is_closed(h) != 1; ++i) {
    if (nbd_aio_notify_read(h) == -1) nbd_aio_notify_write(h);
  }
}

bool NbdEndpoint::PollOnce() {
  nbd_handle* h = handle_.get();
  if (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1) {
    if (connection_error_.empty()) connection_error_ = "the server closed the connection";
    return false;
  }
  PollInterest interest = poll_interest();
  if (interest.fd < 0) {
    if (connection_error_.empty()) connection_error_ = LibnbdError();
    return false;
  }
  pollfd fd{interest.fd, interest.events, 0};
  int ready = poll(&fd, 1, interest.timeout_ms);
  if (ready == -1) {
    if (errno == EINTR) return true;
    connection_error_ = fmt::format("poll: {}", std::strerror(errno));
    return false;
  }
  OnPollEvents(ready == 0 ? 0 : fd.revents);
  return nbd_aio_is_dead(h) != 1;
}

template <typename Start>
Status NbdEndpoint::RunSync(Start start) {
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
      return Status::Error(name_ + ": " + connection_error_, ECONNABORTED);
    }
  }
}

Result<size_t> NbdEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  Status status = RunSync([&] { StartRead(offset, buffer, kSyncTag); });
  if (!status.ok()) return status;
  return buffer.size();
}

Status NbdEndpoint::Write(uint64_t offset, std::span<const std::byte> data) {
  return RunSync([&] { StartWrite(offset, data, kSyncTag); });
}

Status NbdEndpoint::Zero(uint64_t offset, uint64_t length, bool allocate) {
  if (!can_zero_) return WriteZeroBytes(*this, offset, length);
  while (length > 0) {
    uint64_t n = std::min(length, kMaxZeroLength);
    Status status = RunSync([&] { StartZero(offset, n, allocate, kSyncTag); });
    if (!status.ok()) return status;
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status NbdEndpoint::Flush() {
  if (!info_.can_flush) return Status::Ok();
  return RunSync([&] {
    Command* command = NewCommand("flush", 0, 0, kSyncTag);
    nbd_completion_callback done = {
        .callback = OnCommandDone, .user_data = command, .free = nullptr};
    if (nbd_aio_flush(handle_.get(), done, 0) == -1) FailToStart(command);
  });
}

Status NbdEndpoint::BlockStatus(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  const size_t first = out->size();
  // One request answers both contexts; each answer lands in its own list.
  std::vector<Extent> allocation, dirty;
  ExtentCollector collector{
      .allocation = {offset, offset + length, dirty_context_.empty() ? out : &allocation, false},
      .dirty = {offset, offset + length, &dirty, true},
      .dirty_context = &dirty_context_};
  Status status = RunSync([&] {
    Command* command = NewCommand("extents", offset, length, kSyncTag);
    nbd_extent_callback extents = {
        .callback = CollectExtents, .user_data = &collector, .free = nullptr};
    nbd_completion_callback done = {
        .callback = OnCommandDone, .user_data = command, .free = nullptr};
    if (nbd_aio_block_status(handle_.get(), length, offset, extents, done, 0) == -1) {
      FailToStart(command);
    }
  });
  if (!status.ok()) {
    out->resize(first);
    return status;
  }
  if (!dirty_context_.empty()) {
    // No bitmap answer would read as "all clean": never guess that.
    if (dirty.empty()) {
      return IoError(name_, "extents", offset, length,
                     "server described nothing for " + dirty_context_, EIO);
    }
    MergeContexts(offset, std::move(allocation), dirty, out);
  }
  return Status::Ok();
}

Status NbdEndpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
  const uint64_t end = offset + std::min(length, kMaxExtentsLength);
  const size_t first = out->size();
  uint64_t position = offset;
  for (int round = 0; round < kExtentsRounds && position < end; ++round) {
    Status status = BlockStatus(position, end - position, out);
    if (!status.ok()) {
      if (out->size() == first) return status;
      break;  // what was described stands
    }
    uint64_t described = out->size() == first ? position : out->back().offset + out->back().length;
    if (described == position) break;  // no progress
    position = described;
  }
  if (out->size() == first) {
    return IoError(name_, "extents", offset, end - offset, "server described nothing", EIO);
  }
  // (Data, and never clean: copying it is always right.)
  uint64_t minimum_end = std::min(end, offset + kMinDescribed);
  if (position < minimum_end) {
    AddExtent(out, first, Extent{.offset = position, .length = minimum_end - position});
  }
  return Status::Ok();
}

}  // namespace nbdcopy
