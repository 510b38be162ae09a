// The life of an NbdEndpoint's connection as one state, and the one place
// where it changes (NextConnectionState's table). The endpoint tells what
// happened (an event); the table says what that makes of the connection,
// and refuses what cannot happen in its state.
//
// A connection's first handshake (the run's first connection, and each
// worker's), and its next attempts under --retry:
//   kUnconnected, kCut, kRefused  -attempt->   kConnecting
//   kConnecting                   -accepted->  kNegotiating
//   kConnecting, kNegotiating     -ready->     kEstablished
//                                 -cut->       kCut
//                                 -refused->   kRefused
//                                 -unusable->  kUnconnected
// Once established (--retry):
//   kEstablished                  -lost->      kReconnecting
//   kReconnecting                 -ready->     kEstablished
// The end:
//   -give up->    kGaveUp: the attempts ran out, a cancel while waiting for
//                 the next, or the server came back with another export
//   -disconnect-> kDisconnecting: the destructor, outside an attempt
//
// A re-establishment's attempts (inside kReconnecting) are not told apart:
// whichever way one fails, Reconnect tries again while attempts are left,
// and only the run's first connection asks how its first attempt failed.
// Why the connection died is not part of the state: that is the message
// NbdEndpoint keeps beside it (connection_error_).
#ifndef NBDCOPY_NBD_CONNECTION_STATE_H_
#define NBDCOPY_NBD_CONNECTION_STATE_H_

#include <optional>

namespace nbdcopy {

enum class ConnectionState {
  // No connection yet: before the first attempt, or after an attempt that
  // failed outside its handshake (the handle's setup, or an export this
  // copy cannot use; those failures name the endpoint themselves).
  kUnconnected,
  kConnecting,   // an attempt under way, before the server accepted (connect())
  kNegotiating,  // an attempt's handshake past connect(): the server accepted
  kCut,          // the attempt's handshake was cut (nbd_handshake_cut.h)
  kRefused,      // it failed otherwise: refused, unreachable, or the server's answer
  // A handshake succeeded and the export is the reference's: a death from
  // now on is a connection lost (--retry), not one that could not be made.
  kEstablished,
  kReconnecting,   // the established connection died; --retry re-establishing it
  kGaveUp,         // no more attempts: a failure from now on is final
  kDisconnecting,  // NBD_CMD_DISC sent: waiting for the server to hang up
};

enum class ConnectionEvent {
  kAttempt,     // a connection attempt begins (ConnectOnce)
  kAccepted,    // its handshake got past connect() (seen again on every poll)
  kCut,         // its handshake was cut
  kRefused,     // its handshake failed otherwise
  kUnusable,    // it failed outside its handshake
  kReady,       // handshake done, export usable
  kLost,        // the established connection died and --retry re-establishes it
  kGiveUp,      // no more attempts
  kDisconnect,  // NBD_CMD_DISC sent
};

// The state `event` leads to from `state`; nullopt when `event` cannot
// happen in `state`. Pure.
[[nodiscard]] std::optional<ConnectionState> NextConnectionState(ConnectionState state,
                                                                 ConnectionEvent event);

const char* ConnectionStateName(ConnectionState state);
const char* ConnectionEventName(ConnectionEvent event);

// One connection's state, changed only by Apply.
class ConnectionLife {
 public:
  ConnectionState state() const { return state_; }
  // Moves to the state `event` leads to. An event that its state refuses is
  // a bug in NbdEndpoint: it stops the program with a line naming both (a
  // connection driven on from a state it is not in could reconnect when it
  // must not, or fail what it should carry).
  void Apply(ConnectionEvent event);

  // What --retry may still do, whatever the settings: neither given up nor
  // hanging up.
  bool MayReconnect() const {
    return state_ != ConnectionState::kGaveUp && state_ != ConnectionState::kDisconnecting;
  }
  bool disconnecting() const { return state_ == ConnectionState::kDisconnecting; }

 private:
  ConnectionState state_ = ConnectionState::kUnconnected;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_CONNECTION_STATE_H_
