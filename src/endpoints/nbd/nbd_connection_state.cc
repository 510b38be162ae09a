#include "endpoints/nbd/nbd_connection_state.h"

#include <cstdio>
#include <cstdlib>

namespace nbdcopy {

namespace {

using State = ConnectionState;
using Event = ConnectionEvent;

struct Transition {
  State from;
  Event event;
  State to;
};

// Every transition there is; any other (state, event) is refused.
constexpr Transition kTransitions[] = {
    // An attempt at a connection's first handshake: the first, or another
    // after one failed (--retry; a worker's connection tries again whatever
    // the failure, the run's first only after a cut).
    {State::kUnconnected, Event::kAttempt, State::kConnecting},
    {State::kCut, Event::kAttempt, State::kConnecting},
    {State::kRefused, Event::kAttempt, State::kConnecting},
    {State::kConnecting, Event::kAccepted, State::kNegotiating},
    {State::kNegotiating, Event::kAccepted, State::kNegotiating},
    // (libnbd may finish the handshake, or meet its end, before a poll saw
    // the server accept.)
    {State::kConnecting, Event::kReady, State::kEstablished},
    {State::kNegotiating, Event::kReady, State::kEstablished},
    {State::kConnecting, Event::kCut, State::kCut},
    {State::kNegotiating, Event::kCut, State::kCut},
    {State::kConnecting, Event::kRefused, State::kRefused},
    {State::kNegotiating, Event::kRefused, State::kRefused},
    {State::kConnecting, Event::kUnusable, State::kUnconnected},
    {State::kNegotiating, Event::kUnusable, State::kUnconnected},
    // The established connection lost and re-established: each attempt
    // runs inside kReconnecting, and none but a success or the last ends it.
    {State::kEstablished, Event::kLost, State::kReconnecting},
    {State::kReconnecting, Event::kAttempt, State::kReconnecting},
    {State::kReconnecting, Event::kAccepted, State::kReconnecting},
    {State::kReconnecting, Event::kCut, State::kReconnecting},
    {State::kReconnecting, Event::kRefused, State::kReconnecting},
    {State::kReconnecting, Event::kUnusable, State::kReconnecting},
    {State::kReconnecting, Event::kReady, State::kEstablished},
    // No more attempts: between two (they ran out, or a cancel), or in one
    // that found another export.
    {State::kUnconnected, Event::kGiveUp, State::kGaveUp},
    {State::kCut, Event::kGiveUp, State::kGaveUp},
    {State::kRefused, Event::kGiveUp, State::kGaveUp},
    {State::kConnecting, Event::kGiveUp, State::kGaveUp},
    {State::kNegotiating, Event::kGiveUp, State::kGaveUp},
    {State::kReconnecting, Event::kGiveUp, State::kGaveUp},
    // The end (the destructor), whatever came before, but not inside an
    // attempt and not twice.
    {State::kUnconnected, Event::kDisconnect, State::kDisconnecting},
    {State::kCut, Event::kDisconnect, State::kDisconnecting},
    {State::kRefused, Event::kDisconnect, State::kDisconnecting},
    {State::kEstablished, Event::kDisconnect, State::kDisconnecting},
    {State::kGaveUp, Event::kDisconnect, State::kDisconnecting},
};

}  // namespace

std::optional<ConnectionState> NextConnectionState(ConnectionState state, ConnectionEvent event) {
  for (const Transition& transition : kTransitions) {
    if (transition.from == state && transition.event == event) return transition.to;
  }
  return std::nullopt;
}

const char* ConnectionStateName(ConnectionState state) {
  switch (state) {
    case State::kUnconnected:
      return "unconnected";
    case State::kConnecting:
      return "connecting";
    case State::kNegotiating:
      return "negotiating";
    case State::kCut:
      return "cut";
    case State::kRefused:
      return "refused";
    case State::kEstablished:
      return "established";
    case State::kReconnecting:
      return "reconnecting";
    case State::kGaveUp:
      return "gave up";
    case State::kDisconnecting:
      return "disconnecting";
  }
  return "?";
}

const char* ConnectionEventName(ConnectionEvent event) {
  switch (event) {
    case Event::kAttempt:
      return "attempt";
    case Event::kAccepted:
      return "accepted";
    case Event::kCut:
      return "cut";
    case Event::kRefused:
      return "refused";
    case Event::kUnusable:
      return "unusable";
    case Event::kReady:
      return "ready";
    case Event::kLost:
      return "lost";
    case Event::kGiveUp:
      return "give up";
    case Event::kDisconnect:
      return "disconnect";
  }
  return "?";
}

void ConnectionLife::Apply(ConnectionEvent event) {
  std::optional<ConnectionState> next = NextConnectionState(state_, event);
  if (!next) {
    std::fprintf(stderr, "nbdcopy: internal error: NBD connection event \"%s\" in state \"%s\"\n",
                 ConnectionEventName(event), ConnectionStateName(state_));
    std::abort();
  }
  state_ = *next;
}

}  // namespace nbdcopy
