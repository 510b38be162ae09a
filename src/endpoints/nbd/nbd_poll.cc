// NbdEndpoint's waiting: what to poll for, what poll(2) said, and the
// silence limit (--timeout) that gives up on a server that sends nothing
// while something waits for it.
#include <fmt/format.h>
#include <libnbd.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "endpoints/nbd/nbd_endpoint.h"
#include "endpoints/nbd/nbd_poll_events.h"
#include "nbdcopy/cancel.h"

namespace nbdcopy {

namespace {

// How long the server may take to hang up after NBD_CMD_DISC.
constexpr unsigned kDisconnectSeconds = 5;

}  // namespace

// (State questions only: a call refused in this state, nbd_aio_in_flight
// during the handshake for one, would overwrite libnbd's last error.)
bool NbdEndpoint::Waiting() const {
  nbd_handle* h = handle_.get();
  if (connection_.disconnecting() || nbd_aio_is_processing(h) == 1) return true;
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
  if ((connection_.disconnecting() || CancelRequested()) &&
      (limit == 0 || limit > kDisconnectSeconds)) {
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
  const PollNotice notice = NoticeFor(revents, nbd_aio_get_direction(h));
  if (watchdog_ && notice != PollNotice::kNone) watchdog_->Begin(nbd_aio_get_fd(h));
  switch (notice) {
    case PollNotice::kRead:
      rc = nbd_aio_notify_read(h);
      break;
    case PollNotice::kWrite:
      rc = nbd_aio_notify_write(h);
      break;
    case PollNotice::kNone:
      break;
  }
  // Silent past --timeout inside the call itself (a TLS handshake): the
  // watchdog ended it, and the silence is why.
  if (watchdog_ && notice != PollNotice::kNone && watchdog_->End()) {
    connection_error_ = SilenceWords();
  }
  if (revents != 0) {
    last_heard_ = Clock::now();
  } else if (MillisecondsLeft() == 0) {
    Abandon();
  }
  if (rc == -1 && connection_error_.empty()) connection_error_ = LibnbdError();
  // A notification libnbd refused leaves the handle as it was, and poll(2)
  // would report the same again at once: end the connection instead.
  if (rc == -1 && nbd_aio_is_dead(h) != 1 && nbd_aio_is_closed(h) != 1) HangUp();
  ExplainAborted();
  Recover();
}

std::string NbdEndpoint::SilenceWords() const {
  return fmt::format("the server sent nothing for {} second{} (see --timeout)", timeout_,
                     timeout_ == 1 ? "" : "s");
}

void NbdEndpoint::Abandon() {
  connection_error_ = connection_.disconnecting()
                          ? std::string("the server did not hang up after the disconnect")
                          : SilenceWords();
  HangUp();
}

void NbdEndpoint::HangUp() {
  nbd_handle* h = handle_.get();
  // libnbd has no call to drop a connection; ending the socket makes it
  // see the end of the stream, fail every command and turn dead.
  int fd = nbd_aio_get_fd(h);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
  for (int i = 0; i < 4 && nbd_aio_is_dead(h) != 1 && nbd_aio_is_closed(h) != 1; ++i) {
    if (nbd_aio_notify_read(h) == -1) nbd_aio_notify_write(h);
  }
}

bool NbdEndpoint::PollOnce() {
  Recover();  // (nothing, inside Recover's own reconnection)
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
  // (Not h: OnPollEvents may have re-established the connection, closing it.)
  return nbd_aio_is_dead(handle_.get()) != 1;
}

}  // namespace nbdcopy
