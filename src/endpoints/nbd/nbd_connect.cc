// NbdEndpoint's life: a libnbd handle set up, connected (TLS included), its
// handshake run under the silence limit, the server's capabilities read;
// at the end, a clean disconnect.
#include <fmt/format.h>
#include <libnbd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string_view>

#include "endpoints/nbd/nbd_command_end.h"
#include "endpoints/nbd/nbd_endpoint.h"
#include "endpoints/nbd/nbd_export_change.h"
#include "endpoints/nbd/nbd_extents.h"
#include "endpoints/nbd/nbd_handshake_cut.h"
#include "endpoints/nbd/nbd_socket_buffer.h"
#include "endpoints/nbd/nbd_ssh.h"
#include "endpoints/nbd/nbd_tls.h"

namespace nbdcopy {

namespace {

// A failure while creating or connecting a handle: libnbd's own message.
Status SetupError(const std::string& name) { return Status::Error(name + ": " + LibnbdError()); }

// libnbd's debug messages quote URIs whole; pass them on without secrets.
int PrintDebug(void* user_data, const char* context, const char* message) {
  std::fprintf(stderr, "libnbd: debug: %s: %s\n", context, RedactPasswords(message).c_str());
  return 0;
}

// A handle set up for one endpoint, not yet connected.
Result<NbdHandle> CreateHandle(const std::string& name, Role role, bool debug,
                               const std::string& dirty_context) {
  NbdHandle handle(nbd_create());
  if (!handle) return SetupError(name);
  nbd_handle* h = handle.get();
  nbd_debug_callback print_debug = {.callback = PrintDebug, .user_data = nullptr, .free = nullptr};
  if (nbd_set_debug(h, debug) == -1 || (debug && nbd_set_debug_callback(h, print_debug) == -1) ||
      nbd_set_handle_name(h, role == Role::kSource ? "src" : "dst") == -1 ||
      nbd_set_uri_allow_local_file(h, true) == -1 ||
      // libnbd would clear every read buffer first; a failed read is never
      // used here, and a read the server did not fill fails (ReadCoverage),
      // so that memset is pure cost (most of our CPU time).
      nbd_set_pread_initialize(h, false) == -1 || nbd_add_meta_context(h, kBaseAllocation) == -1 ||
      (!dirty_context.empty() && nbd_add_meta_context(h, dirty_context.c_str()) == -1)) {
    return SetupError(name);
  }
  return handle;
}

// A URI's TLS settings, checked, with what libnbd 1.14 ignores applied to
// the handle; none for a "[ CMD ]" server.
Result<UriTls> ApplyUriTls(nbd_handle* h, const EndpointSpec& spec, const std::string& name) {
  if (spec.kind != EndpointKind::kNbdUri) return UriTls{};
  Result<UriTls> tls = ParseUriTls(spec.text);
  if (!tls.ok()) return tls.status().WithPrefix(name);
  if (Status files = CheckTlsFiles(*tls); !files.ok()) return files.WithPrefix(name);
  // libnbd 1.14 ignores this URI parameter: apply it ourselves.
  if (tls->verify_peer && nbd_set_tls_verify_peer(h, *tls->verify_peer) == -1) {
    return SetupError(name);
  }
  return tls;
}

// The command libnbd runs for the server, if any: "[ CMD ]", or ssh.
std::vector<std::string> ServerCommand(const EndpointSpec& spec) {
  if (spec.ssh) return SshCommand(*spec.ssh);
  return spec.argv;
}

// Starts connecting (-1: libnbd refused); the handshake runs later, where
// the silence limit applies.
int StartConnecting(nbd_handle* h, const EndpointSpec& spec) {
  if (spec.ssh) return StartSshConnecting(h, *spec.ssh);
  if (spec.kind == EndpointKind::kCommand) {
    std::vector<char*> argv;
    for (const std::string& word : spec.argv) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    return nbd_aio_connect_systemd_socket_activation(h, argv.data());
  }
  return nbd_aio_connect_uri(h, WithoutPassword(spec.text).c_str());
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
                                                          const NbdSettings& settings) {
  std::string dirty_context =
      settings.dirty_bitmap.empty() ? std::string() : kDirtyBitmapPrefix + settings.dirty_bitmap;
  std::unique_ptr<NbdEndpoint> endpoint(
      new NbdEndpoint(spec, role, settings, std::move(dirty_context), NbdHandle(), nullptr));
  Status status = endpoint->ConnectOnce();
  // Cut while it negotiated, the run's first connection is a dropped
  // connection like any other (--retry); refused, or answered, it fails.
  const ConnectionState failure = endpoint->connection_.state();
  if (!status.ok() && failure == ConnectionState::kCut && endpoint->MayReconnect()) {
    status = endpoint->Reconnect(status.message());
    if (!status.ok()) return status.WithPrefix(endpoint->name_);
  }
  if (!status.ok()) {
    // (The failures outside the handshake name the endpoint themselves.)
    const bool handshake = failure == ConnectionState::kCut || failure == ConnectionState::kRefused;
    return handshake ? status.WithPrefix(endpoint->name_) : status;
  }
  endpoint->reference_ = std::make_shared<const EndpointInfo>(endpoint->info_);
  return endpoint;
}

Result<std::unique_ptr<Endpoint>> NbdEndpoint::Connect() {
  // (Reads only const members: reference_ is set before any other thread
  // can call this.)
  std::unique_ptr<NbdEndpoint> other(
      new NbdEndpoint(spec_, role_, settings_, dirty_context_, NbdHandle(), reference_));
  Status status = other->ConnectOnce();
  // A server restarting or a connection cut while this one handshakes is
  // what --retry carries, as it does for a connection lost later.
  if (!status.ok() && other->MayReconnect()) status = other->Reconnect(status.message());
  if (!status.ok()) return status.WithPrefix(name_);
  return std::unique_ptr<Endpoint>(std::move(other));
}

Status NbdEndpoint::ConnectOnce() {
  connection_.Apply(ConnectionEvent::kAttempt);
  // A failure outside the handshake (it names the endpoint itself).
  auto unusable = [this](Status status) {
    connection_.Apply(ConnectionEvent::kUnusable);
    return status;
  };
  Result<NbdHandle> handle = CreateHandle(name_, role_, settings_.debug, dirty_context_);
  if (!handle.ok()) return unusable(handle.status());
  Result<UriTls> tls = ApplyUriTls(handle->get(), spec_, name_);
  if (!tls.ok()) return unusable(tls.status());
  // Once the run's first connection is made, its credentials are proven.
  const bool credentials_worked = reference_ != nullptr;
  const std::vector<std::string> server_command = ServerCommand(spec_);
  const bool command = !server_command.empty();
  const std::vector<pid_t> children = command ? ThreadChildren() : std::vector<pid_t>();
  const int started = StartConnecting(handle->get(), spec_);
  // (libnbd may connect, and meet the end of the stream, in that call.)
  const std::string start_error = started == -1 ? LibnbdError() : std::string();
  command_pid_ = command ? NewChild(children, ThreadChildren()) : 0;
  handle_ = std::move(handle).value();  // closes the dead one
  connection_error_.clear();
  if (started == -1 || !FinishConnecting(tls->tls)) {
    std::string why = started == -1               ? start_error
                      : connection_error_.empty() ? LibnbdError()
                                                  : connection_error_;
    const bool accepted = connection_.state() == ConnectionState::kNegotiating;
    connection_.Apply(IsHandshakeCut(accepted, why) ? ConnectionEvent::kCut
                                                    : ConnectionEvent::kRefused);
    why = ExplainConnectFailure(*tls, why, credentials_worked);
    // A server command (or ssh) gone: libnbd's words, then which and why.
    const bool zero_is_news = !spec_.ssh;
    if (std::string end = command ? CommandEnd(server_command, command_pid_, zero_is_news) : "";
        !end.empty()) {
      why += " (" + end + ")";
    }
    return Status::Error(why);
  }
  WidenUnixSendBuffer(nbd_aio_get_fd(handle_.get()));
  EndpointInfo now;
  if (Status status = ReadCapabilities(&now); !status.ok()) return unusable(status);
  // The copy planned with the reference: a server that changed it is
  // another one.
  if (reference_) {
    if (std::string change = ExportChange(*reference_, now); !change.empty()) {
      connection_.Apply(ConnectionEvent::kGiveUp);
      return Status::Error(fmt::format("the server came back with another export ({})", change));
    }
  }
  // A connection's first handshake (not a re-establishment) describes it.
  if (connection_.state() != ConnectionState::kReconnecting) info_ = now;
  connection_.Apply(ConnectionEvent::kReady);
  return Status::Ok();
}

Status NbdEndpoint::ReadCapabilities(EndpointInfo* out) {
  nbd_handle* h = handle_.get();
  int64_t size = nbd_get_size(h);
  // libnbd 1.14 hands a size of 2^63 or more on as a negative number.
  if (size < 0) return Status::Error(name_ + ": the server's export size is larger than 2^63-1");
  // Before anything else: without the bitmap there is nothing to copy by.
  if (!dirty_context_.empty() && nbd_can_meta_context(h, dirty_context_.c_str()) != 1) {
    return Status::Error(
        fmt::format("--dirty-bitmap={}: {}: the server does not offer the "
                    "meta context {}",
                    dirty_bitmap_, name_, dirty_context_));
  }
  EndpointInfo& info = *out;
  info.ops_name = "nbd_ops";
  info.served = true;
  info.size = static_cast<uint64_t>(size);
  info.read_only = nbd_is_read_only(h) == 1;
  info.efficient_zero = nbd_can_zero(h) == 1;
  info.overlapped_io = true;
  info.can_flush = nbd_can_flush(h) == 1;
  // A server started by "[ CMD ]" listens on a socket only libnbd holds.
  info.can_multi_conn = spec_.kind != EndpointKind::kCommand && nbd_can_multi_conn(h) == 1;
  // Destinations too: --verify reads them back.
  info.can_extents = nbd_can_meta_context(h, kBaseAllocation) == 1 || !dirty_context_.empty();
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
  return Status::Ok();
}

bool NbdEndpoint::FinishConnecting(bool tls) {
  last_heard_ = Clock::now();
  std::optional<NotifyWatchdog> watchdog;
  if (tls && timeout_ > 0) watchdog.emplace(std::chrono::seconds(timeout_));
  watchdog_ = watchdog ? &*watchdog : nullptr;
  struct Unwatch {
    NotifyWatchdog*& watchdog;
    ~Unwatch() { watchdog = nullptr; }
  } unwatch{watchdog_};
  while (nbd_aio_is_connecting(handle_.get()) == 1 || nbd_aio_is_negotiating(handle_.get()) == 1) {
    // (nbd_aio_is_connecting covers the whole handshake; the state's name
    // tells connect() from what follows it.)
    const char* state = nbd_connection_state(handle_.get());
    if (state != nullptr && !std::string_view(state).starts_with("CONNECT")) {
      connection_.Apply(ConnectionEvent::kAccepted);
    }
    if (!PollOnce()) return false;
  }
  return nbd_aio_is_ready(handle_.get()) == 1;
}

NbdEndpoint::~NbdEndpoint() {
  // A clean disconnect lets the server finish (qemu-nbd exits after its
  // last client), but a silent server must not keep us: the same limit.
  nbd_handle* h = handle_.get();
  if (h == nullptr) return;  // it never got so far as a handle
  if (nbd_aio_is_ready(h) == 1 && nbd_aio_disconnect(h, 0) == 0) {
    connection_.Apply(ConnectionEvent::kDisconnect);
    last_heard_ = Clock::now();
    while (nbd_aio_is_closed(h) != 1 && PollOnce()) {
    }
  }
  // nbd_close waits for libnbd's child. An ssh whose far side does not
  // end (Debian 13: ssh 10.0 with nc 1.229 outlives the NBD connection,
  // and nbdcopy 1.22.2 hangs there) would keep us: every reply is in, so
  // it has nothing left to carry.
  if (spec_.ssh) nbd_kill_subprocess(h, SIGTERM);
}

}  // namespace nbdcopy
