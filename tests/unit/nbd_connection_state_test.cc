#include "endpoints/nbd/nbd_connection_state.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace nbdcopy {

// (GoogleTest's words for a state that differs from the one expected.)
static void PrintTo(ConnectionState state, std::ostream* out) {
  *out << ConnectionStateName(state);
}

namespace {

using State = ConnectionState;
using Event = ConnectionEvent;

constexpr State kStates[] = {State::kUnconnected,  State::kConnecting, State::kNegotiating,
                             State::kCut,          State::kRefused,    State::kEstablished,
                             State::kReconnecting, State::kGaveUp,     State::kDisconnecting};
constexpr Event kEvents[] = {Event::kAttempt, Event::kAccepted, Event::kCut,
                             Event::kRefused, Event::kUnusable, Event::kReady,
                             Event::kLost,    Event::kGiveUp,   Event::kDisconnect};

// One event: fails the test when the state refuses it (and does not Apply
// it then, which would stop the program).
void Step(ConnectionLife* life, Event event) {
  std::optional<State> next = NextConnectionState(life->state(), event);
  EXPECT_TRUE(next.has_value()) << ConnectionEventName(event) << " refused in "
                                << ConnectionStateName(life->state());
  if (!next) return;
  life->Apply(event);
  EXPECT_EQ(life->state(), *next);
}

// A connection driven through `events` from the start.
ConnectionLife Through(const std::vector<Event>& events) {
  ConnectionLife life;
  for (Event event : events) Step(&life, event);
  return life;
}

State After(const std::vector<Event>& events) { return Through(events).state(); }

bool Refused(State state, Event event) { return !NextConnectionState(state, event).has_value(); }

TEST(NbdConnectionStateTest, AConnectionStartsUnconnected) {
  EXPECT_EQ(ConnectionLife().state(), State::kUnconnected);
}

TEST(NbdConnectionStateTest, AFirstHandshakeEstablishesTheConnection) {
  EXPECT_EQ(After({Event::kAttempt}), State::kConnecting);
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted}), State::kNegotiating);
  // The handshake's every poll past connect() says so again.
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kAccepted}), State::kNegotiating);
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kReady}), State::kEstablished);
  // libnbd finished the handshake before a poll saw the server accept.
  EXPECT_EQ(After({Event::kAttempt, Event::kReady}), State::kEstablished);
}

TEST(NbdConnectionStateTest, AFailedHandshakeSaysHowItFailed) {
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kCut}), State::kCut);
  EXPECT_EQ(After({Event::kAttempt, Event::kCut}), State::kCut);
  EXPECT_EQ(After({Event::kAttempt, Event::kRefused}), State::kRefused);
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kRefused}), State::kRefused);
  // Outside the handshake (the handle's setup, an export we cannot use).
  EXPECT_EQ(After({Event::kAttempt, Event::kUnusable}), State::kUnconnected);
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kUnusable}), State::kUnconnected);
}

TEST(NbdConnectionStateTest, AFailedFirstHandshakeMayBeAttemptedAgain) {
  EXPECT_EQ(After({Event::kAttempt, Event::kCut, Event::kAttempt, Event::kAccepted, Event::kReady}),
            State::kEstablished);
  EXPECT_EQ(After({Event::kAttempt, Event::kRefused, Event::kAttempt}), State::kConnecting);
  EXPECT_EQ(After({Event::kAttempt, Event::kUnusable, Event::kAttempt}), State::kConnecting);
}

TEST(NbdConnectionStateTest, ALostConnectionIsReestablishedThroughFailedAttempts) {
  ConnectionLife life = Through({Event::kAttempt, Event::kReady});
  Step(&life, Event::kLost);
  EXPECT_EQ(life.state(), State::kReconnecting);
  // Whichever way an attempt fails, the next one follows: still reconnecting.
  for (Event event : {Event::kAttempt, Event::kAccepted, Event::kCut, Event::kAttempt,
                      Event::kRefused, Event::kAttempt, Event::kUnusable, Event::kAttempt}) {
    Step(&life, event);
    EXPECT_EQ(life.state(), State::kReconnecting) << ConnectionEventName(event);
  }
  Step(&life, Event::kReady);
  EXPECT_EQ(life.state(), State::kEstablished);
  // And lost again later.
  Step(&life, Event::kLost);
  EXPECT_EQ(life.state(), State::kReconnecting);
}

TEST(NbdConnectionStateTest, GivingUpEndsTheAttempts) {
  // The attempts ran out (or a cancel) between two, before or after the
  // connection was first established.
  EXPECT_EQ(After({Event::kAttempt, Event::kCut, Event::kGiveUp}), State::kGaveUp);
  EXPECT_EQ(After({Event::kAttempt, Event::kRefused, Event::kGiveUp}), State::kGaveUp);
  EXPECT_EQ(After({Event::kAttempt, Event::kUnusable, Event::kGiveUp}), State::kGaveUp);
  EXPECT_EQ(After({Event::kAttempt, Event::kReady, Event::kLost, Event::kAttempt, Event::kCut,
                   Event::kGiveUp}),
            State::kGaveUp);
  // Another export, found by an attempt.
  EXPECT_EQ(After({Event::kAttempt, Event::kAccepted, Event::kGiveUp}), State::kGaveUp);
  EXPECT_EQ(After({Event::kAttempt, Event::kReady, Event::kLost, Event::kAttempt, Event::kGiveUp}),
            State::kGaveUp);
  // Nothing but the end follows.
  for (Event event : kEvents) {
    EXPECT_EQ(Refused(State::kGaveUp, event), event != Event::kDisconnect)
        << ConnectionEventName(event);
  }
}

TEST(NbdConnectionStateTest, TheDisconnectEndsEveryStateOutsideAnAttempt) {
  for (State state : kStates) {
    const bool in_attempt = state == State::kConnecting || state == State::kNegotiating ||
                            state == State::kReconnecting;
    const bool legal = !in_attempt && state != State::kDisconnecting;
    EXPECT_EQ(NextConnectionState(state, Event::kDisconnect),
              legal ? std::optional<State>(State::kDisconnecting) : std::nullopt)
        << ConnectionStateName(state);
  }
  // And nothing follows it.
  for (Event event : kEvents) EXPECT_TRUE(Refused(State::kDisconnecting, event));
}

TEST(NbdConnectionStateTest, WhatCannotHappenIsRefused) {
  // Lost before the first handshake succeeded: that is a failure to connect.
  for (State state : {State::kUnconnected, State::kConnecting, State::kNegotiating, State::kCut,
                      State::kRefused}) {
    EXPECT_TRUE(Refused(state, Event::kLost)) << ConnectionStateName(state);
  }
  // Lost again while re-establishing: Recover is running already.
  EXPECT_TRUE(Refused(State::kReconnecting, Event::kLost));
  // An established connection is not attempted, nor given up, without
  // being lost first.
  for (Event event : {Event::kAttempt, Event::kAccepted, Event::kCut, Event::kRefused,
                      Event::kUnusable, Event::kReady, Event::kGiveUp}) {
    EXPECT_TRUE(Refused(State::kEstablished, event)) << ConnectionEventName(event);
  }
  // A handshake's outcome needs a handshake under way.
  for (State state : {State::kUnconnected, State::kCut, State::kRefused}) {
    for (Event event :
         {Event::kAccepted, Event::kCut, Event::kRefused, Event::kUnusable, Event::kReady}) {
      EXPECT_TRUE(Refused(state, event))
          << ConnectionEventName(event) << " in " << ConnectionStateName(state);
    }
  }
  // An attempt does not begin inside another, nor past the server's accept.
  EXPECT_TRUE(Refused(State::kConnecting, Event::kAttempt));
  EXPECT_TRUE(Refused(State::kNegotiating, Event::kAttempt));
}

// The whole table, written out once more: every (state, event) pair is one
// of these transitions, to this state, or refused.
TEST(NbdConnectionStateTest, TheTableHoldsExactlyTheseTransitions) {
  const std::map<std::pair<State, Event>, State> table = {
      {{State::kUnconnected, Event::kAttempt}, State::kConnecting},
      {{State::kCut, Event::kAttempt}, State::kConnecting},
      {{State::kRefused, Event::kAttempt}, State::kConnecting},
      {{State::kConnecting, Event::kAccepted}, State::kNegotiating},
      {{State::kNegotiating, Event::kAccepted}, State::kNegotiating},
      {{State::kConnecting, Event::kReady}, State::kEstablished},
      {{State::kNegotiating, Event::kReady}, State::kEstablished},
      {{State::kConnecting, Event::kCut}, State::kCut},
      {{State::kNegotiating, Event::kCut}, State::kCut},
      {{State::kConnecting, Event::kRefused}, State::kRefused},
      {{State::kNegotiating, Event::kRefused}, State::kRefused},
      {{State::kConnecting, Event::kUnusable}, State::kUnconnected},
      {{State::kNegotiating, Event::kUnusable}, State::kUnconnected},
      {{State::kEstablished, Event::kLost}, State::kReconnecting},
      {{State::kReconnecting, Event::kAttempt}, State::kReconnecting},
      {{State::kReconnecting, Event::kAccepted}, State::kReconnecting},
      {{State::kReconnecting, Event::kCut}, State::kReconnecting},
      {{State::kReconnecting, Event::kRefused}, State::kReconnecting},
      {{State::kReconnecting, Event::kUnusable}, State::kReconnecting},
      {{State::kReconnecting, Event::kReady}, State::kEstablished},
      {{State::kUnconnected, Event::kGiveUp}, State::kGaveUp},
      {{State::kCut, Event::kGiveUp}, State::kGaveUp},
      {{State::kRefused, Event::kGiveUp}, State::kGaveUp},
      {{State::kConnecting, Event::kGiveUp}, State::kGaveUp},
      {{State::kNegotiating, Event::kGiveUp}, State::kGaveUp},
      {{State::kReconnecting, Event::kGiveUp}, State::kGaveUp},
      {{State::kUnconnected, Event::kDisconnect}, State::kDisconnecting},
      {{State::kCut, Event::kDisconnect}, State::kDisconnecting},
      {{State::kRefused, Event::kDisconnect}, State::kDisconnecting},
      {{State::kEstablished, Event::kDisconnect}, State::kDisconnecting},
      {{State::kGaveUp, Event::kDisconnect}, State::kDisconnecting},
  };
  for (State state : kStates) {
    for (Event event : kEvents) {
      auto row = table.find({state, event});
      EXPECT_EQ(NextConnectionState(state, event),
                row == table.end() ? std::nullopt : std::optional<State>(row->second))
          << ConnectionEventName(event) << " in " << ConnectionStateName(state);
    }
  }
}

TEST(NbdConnectionStateTest, OnlyGivingUpAndHangingUpForbidReconnecting) {
  // Each state, reached by a path the table allows.
  const std::map<State, std::vector<Event>> paths = {
      {State::kUnconnected, {}},
      {State::kConnecting, {Event::kAttempt}},
      {State::kNegotiating, {Event::kAttempt, Event::kAccepted}},
      {State::kCut, {Event::kAttempt, Event::kCut}},
      {State::kRefused, {Event::kAttempt, Event::kRefused}},
      {State::kEstablished, {Event::kAttempt, Event::kReady}},
      {State::kReconnecting, {Event::kAttempt, Event::kReady, Event::kLost}},
      {State::kGaveUp, {Event::kAttempt, Event::kCut, Event::kGiveUp}},
      {State::kDisconnecting, {Event::kAttempt, Event::kReady, Event::kDisconnect}},
  };
  for (State state : kStates) {
    const ConnectionLife life = Through(paths.at(state));
    ASSERT_EQ(life.state(), state);
    const bool ended = state == State::kGaveUp || state == State::kDisconnecting;
    EXPECT_EQ(life.MayReconnect(), !ended) << ConnectionStateName(state);
    EXPECT_EQ(life.disconnecting(), state == State::kDisconnecting) << ConnectionStateName(state);
  }
}

TEST(NbdConnectionStateTest, NamesForTheInternalErrorLine) {
  EXPECT_STREQ(ConnectionStateName(State::kGaveUp), "gave up");
  EXPECT_STREQ(ConnectionEventName(Event::kDisconnect), "disconnect");
  std::set<std::string> names;
  for (State state : kStates) names.insert(ConnectionStateName(state));
  EXPECT_EQ(names.size(), std::size(kStates));
}

}  // namespace
}  // namespace nbdcopy
