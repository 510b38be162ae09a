// NbdEndpoint's --retry: a connection that died is re-established and the
// commands lost with it are issued again.
#include <fmt/format.h>
#include <libnbd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "endpoints/nbd/nbd_endpoint.h"
#include "nbdcopy/cancel.h"

namespace nbdcopy {

namespace {

constexpr auto kFirstBackoff = std::chrono::seconds(1);
constexpr auto kLongestBackoff = std::chrono::seconds(60);

// Sleeps, waking for a cancel; false if one was asked.
bool SleepUnlessCancelled(Clock::duration duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
    if (CancelRequested()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(
        std::chrono::milliseconds(100), until - Clock::now()));
  }
  return !CancelRequested();
}

}  // namespace

bool NbdEndpoint::MayReconnect() const {
  return settings_.retry > 0 && spec_.kind == EndpointKind::kNbdUri && connection_.MayReconnect();
}

bool NbdEndpoint::Recover() {
  // (During the first handshake a death is a failure to connect, which
  // the caller of ConnectOnce handles; inside a re-establishment, Recover
  // is running already. Given up or hanging up, MayReconnect() is false and
  // nothing waits in lost_: there is nothing to do either.)
  if (connection_.state() != ConnectionState::kEstablished) return false;
  nbd_handle* h = handle_.get();
  bool dead = nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1;
  // NBD_ESHUTDOWN: the server says it is going away; its connection with it.
  if (!dead && MayReconnect() && std::any_of(lost_.begin(), lost_.end(), [](Command* command) {
        return command->error == ESHUTDOWN;
      })) {
    connection_error_ = "the server is shutting down";
    HangUp();
    dead = true;
  }
  if (!MayReconnect() || !dead) {
    // The connection lives: those were a live server's error replies.
    std::vector<Command*> replied;
    replied.swap(lost_);
    for (Command* command : replied) Complete(command, command->error);
    if (!replied.empty()) ExplainAborted();
    return false;
  }
  connection_.Apply(ConnectionEvent::kLost);
  ExplainAborted();  // block-status requests fail with the reason
  NoteDeathReason();
  const std::string reason = connection_error_;
  Status status = Reconnect(reason);  // established again, or given up
  std::vector<Command*> lost;
  lost.swap(lost_);
  if (!status.ok()) {
    connection_error_ = status.message();
    for (Command* command : lost) {
      completions_.push_back(Completion{
          command->tag, OpError(command->op, command->offset, command->length, status.message())});
      free_commands_.push_back(command);
    }
    return false;
  }
  for (Command* command : lost) Issue(command);
  return true;
}

Status NbdEndpoint::Reconnect(const std::string& reason) {
  const unsigned attempts = settings_.retry;
  auto notice = [this](const std::string& line) {
    if (settings_.notices && settings_.notices->notice)
      settings_.notices->notice(name_ + ": " + line);
  };
  auto give_up = [this](Status status) {
    connection_.Apply(ConnectionEvent::kGiveUp);
    return status;
  };
  std::string why = reason;
  while (failed_attempts_ < attempts) {
    const unsigned attempt = ++failed_attempts_;
    // The first attempt at once (a load balancer or NAT dropped an idle
    // connection: the server is there), then 1 s, 2 s, 4 s ...
    const auto backoff =
        attempt == 1 ? Clock::duration::zero()
                     : std::min<Clock::duration>(
                           kLongestBackoff, kFirstBackoff * (1u << std::min(attempt - 2, 6u)));
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(backoff).count();
    notice(attempt == 1
               ? fmt::format("connection lost ({}); reconnecting (attempt 1 of {})", why, attempts)
               : fmt::format("connection lost ({}); reconnecting in {} s (attempt {} of {})", why,
                             seconds, attempt, attempts));
    if (!SleepUnlessCancelled(backoff)) {
      return give_up(Status::Error("interrupted while reconnecting"));
    }
    Status status = ConnectOnce();
    if (status.ok()) {
      ++reconnections_;
      if (settings_.notices) settings_.notices->reconnections.fetch_add(1);
      notice(fmt::format("reconnected (attempt {} of {})", attempt, attempts));
      return Status::Ok();
    }
    // Another export: no point trying again.
    if (connection_.state() == ConnectionState::kGaveUp) return status;
    why = status.message();
  }
  return give_up(Status::Error(fmt::format(
      "the connection was lost ({}) and could not be re-established in {} attempt{} (--retry={}): "
      "{}",
      reason, attempts, attempts == 1 ? "" : "s", attempts, why)));
}

}  // namespace nbdcopy
