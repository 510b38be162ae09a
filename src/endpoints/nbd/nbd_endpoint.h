// An NBD server reached through libnbd: by URI (nbd://, nbds+unix://, vsock,
// TLS with tls-psk-file=) or as "[ CMD ARGS ... ]", a server that libnbd
// starts with systemd socket activation and stops when the handle closes.
//
// Every libnbd call is asynchronous underneath, synchronous ones included,
// so one rule covers the handshake and every request: a server that sends
// nothing for `timeout_seconds` while something waits for it (a hung or
// hostile server) has its connection abandoned, and whatever waited fails
// with a message that says so. Replies are checked beyond what libnbd
// 1.14 checks: a read must be covered by the server's chunks exactly once
// (nbd_read_coverage.h), and only the first block-status chunk of a reply
// is believed (nbd_extents.h).
//
// With `retry` > 0, a connection by URI that dies (the peer closes or
// resets it, or falls silent past the limit) is re-established (the same
// export and TLS settings) at once, then after 1 s, 2 s, 4 s ... up to
// `retry` attempts since it last carried a request, and every command in
// flight on it is issued again: NBD reads, writes, zeroes and flushes are
// idempotent. A block-status request is not: it fails, and the copy treats
// its range as data. An error reply from a live server is no dropped
// connection and fails as always; a "[ CMD ]" server is never reconnected.
//
// The run's first connection (the static Connect) reads the export the
// copy is planned with, its reference, and fails at once when it is
// refused or the server's answer is final (as curl does without
// --retry-connrefused); cut while it negotiates, it is under --retry like
// any dropped connection (nbd_handshake_cut.h says which is which). Every other
// connection (Connect() on an endpoint: another worker's, opened mid-copy)
// is under --retry from its first handshake on, and every connection,
// first or re-established, must find the reference's size, flags and block
// sizes (nbd_export_change.h).
//
// The implementation, by concern: nbd_connect.cc (handle setup, TLS,
// handshake, capabilities, disconnect), nbd_poll.cc (poll interest and the
// silence limit), nbd_commands.cc (asynchronous commands and their
// errors), nbd_sync.cc (the synchronous calls, run over the asynchronous
// ones), nbd_extents.cc (block-status replies as extents),
// nbd_reconnect.cc (re-establishing a dropped connection); the
// connection's life as one state: nbd_connection_state.h.
//
// Ownership and thread safety: an NbdEndpoint owns its libnbd handle and
// both belong to one worker thread. libnbd runs our callbacks only inside
// our own calls on the handle, so they run on that thread too, and nothing
// here locks. The exception is Connect() (the instance one): it reads only
// const members and makes a new handle, so any thread may call it.
#ifndef NBDCOPY_NBD_ENDPOINT_H_
#define NBDCOPY_NBD_ENDPOINT_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "endpoints/endpoint_spec.h"
#include "endpoints/nbd/nbd_connection_state.h"
#include "endpoints/nbd/nbd_notify_watchdog.h"
#include "endpoints/nbd/nbd_read_coverage.h"
#include "endpoints/reconnect_notices.h"
#include "nbdcopy/endpoint.h"

struct nbd_handle;

namespace nbdcopy {

// libnbd's last error message in this thread (libnbd keeps it per thread),
// passwords redacted.
[[nodiscard]] std::string LibnbdError();

struct NbdHandleCloser {
  void operator()(nbd_handle* handle) const;
};
using NbdHandle = std::unique_ptr<nbd_handle, NbdHandleCloser>;

struct NbdSettings {
  bool debug = false;  // libnbd's debug messages (stderr)
  // Non-empty: ask for the meta context "qemu:dirty-bitmap:NAME" as well and
  // fail unless the server offers it; Extents() then marks the unchanged
  // ranges clean.
  std::string dirty_bitmap;
  // How long the server may stay silent while something waits for it; 0
  // waits forever.
  unsigned timeout_seconds = 0;
  unsigned retry = 0;  // attempts to re-establish a dropped connection (URIs only)
  std::shared_ptr<ReconnectNotices> notices;  // may be null
};

class NbdEndpoint : public Endpoint {
 public:
  // REQUIRES spec.kind is kNbdUri or kCommand.
  static Result<std::unique_ptr<NbdEndpoint>> Connect(const EndpointSpec& spec, Role role,
                                                      const NbdSettings& settings);
  ~NbdEndpoint() override;

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override;
  Status Flush() override;
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override;
  Result<std::unique_ptr<Endpoint>> Connect() override;
  uint64_t reconnections() const override { return reconnections_; }

  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override;
  void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) override;
  void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) override;
  void TakeCompletions(std::vector<Completion>* out) override;
  PollInterest poll_interest() const override;
  void OnPollEvents(short revents) override;

 private:
  // One asynchronous command: what libnbd's callbacks need to report it.
  // Pooled (commands_ owns them), so a steady copy allocates none.
  enum class Op { kRead, kWrite, kZero, kFlush, kExtents };
  struct Command {
    NbdEndpoint* endpoint;
    Op kind;
    const char* op;  // its name in messages
    uint64_t offset;
    uint64_t length;
    uint64_t tag;
    ReadCoverage coverage;  // reads: the chunks the server sent
    // What issuing it again needs (a reconnect): the caller's buffer,
    // valid until it completes, and the command's flags.
    void* buffer = nullptr;
    uint32_t flags = 0;
    int error = 0;  // waiting in lost_: the errno it failed with
  };

  NbdEndpoint(const EndpointSpec& spec, Role role, const NbdSettings& settings,
              std::string dirty_context, NbdHandle handle,
              std::shared_ptr<const EndpointInfo> reference)
      : spec_(spec),
        role_(role),
        settings_(settings),
        dirty_bitmap_(settings.dirty_bitmap),
        dirty_context_(std::move(dirty_context)),
        timeout_(settings.timeout_seconds),
        name_(DisplayName(spec)),
        reference_(std::move(reference)),
        handle_(std::move(handle)) {}
  // Drives the handshake that nbd_aio_connect* began; false if it failed
  // (connection_error_ or libnbd's last error says why). tls: an nbds URI
  // (its handshake is watched: nbd_notify_watchdog.h).
  [[nodiscard]] bool FinishConnecting(bool tls);
  // After the handshake: fills *info from what the server offers; fails
  // for an export size libnbd cannot report, and for a dirty bitmap the
  // server does not offer.
  [[nodiscard]] Status ReadCapabilities(EndpointInfo* info);
  // Whether block status travels with 64-bit lengths on this connection
  // (extended headers negotiated, and a libnbd that hands them on).
  bool WideBlockStatus() const;
  // The error of a libnbd call that failed just now (on this thread).
  [[nodiscard]] Status LastError(const char* op, uint64_t offset, uint64_t length) const;
  // The request covers the short last block of an export whose size is not
  // a multiple of the minimum block size: libnbd's alignment check would
  // refuse it, yet the protocol allows it.
  bool IsShortTail(uint64_t offset, uint64_t length) const;
  // Runs `start` (a libnbd call) with the alignment check off for short tails.
  template <typename Call>
  int WithTailAllowed(uint64_t offset, uint64_t length, Call start);
  Command* NewCommand(Op kind, const char* op, uint64_t offset, uint64_t length, uint64_t tag);
  // Sends command to the server (again, after a reconnect); a call libnbd
  // refuses becomes its completion.
  void Issue(Command* command);
  // Records the end of command (error_number 0 = success) and recycles
  // it, or keeps it in lost_ when the error may mean a dropped connection.
  void Finish(Command* command, int error_number);
  // Records the end of command: its completion, and recycles it.
  void Complete(Command* command, int error_number);
  // A Start* call that libnbd refused: report it as a completion.
  void FailToStart(Command* command);
  static int OnCommandDone(void* user_data, int* error);
  static int OnReadChunk(void* user_data, const void* data, size_t count, uint64_t offset,
                         unsigned status, int* error);
  // One block-status request; appends what the reply describes (a prefix,
  // maybe empty), or nothing when it fails.
  [[nodiscard]] Status BlockStatus(uint64_t offset, uint64_t length, std::vector<Extent>* out);
  // Waits for the operation that start() begins with kSyncTag.
  template <typename Start>
  [[nodiscard]] Status AwaitSync(Start start);
  // Waits for the connection once (at most until the silence limit);
  // false once the connection is dead.
  [[nodiscard]] bool PollOnce();
  // "the server sent nothing for N seconds (see --timeout)"
  std::string SilenceWords() const;
  // Whether the server owes us something: a handshake step or a reply.
  bool Waiting() const;
  int MillisecondsLeft() const;
  // Gives up on a silent server: ends the connection, which fails every
  // command waiting on it.
  void Abandon();
  // Ends the connection from our side; libnbd fails what is in flight.
  void HangUp();
  // Whether a dead connection may be re-established (--retry).
  bool MayReconnect() const;
  // After a libnbd call returned: if the connection died and may be
  // re-established, does so and issues the lost commands again, or fails
  // them when it cannot. Returns true if it reconnected.
  bool Recover();
  // Connects again, with backoff, up to the attempts left; checks the
  // export is unchanged.
  [[nodiscard]] Status Reconnect(const std::string& reason);
  // One attempt: a new handle, connected, its export checked against
  // reference_ (once set). When it fails, connection_ says how: kCut or
  // kRefused in the handshake, kUnconnected outside it, kGaveUp for another
  // export (kReconnecting: a re-establishment's attempts are not told apart).
  [[nodiscard]] Status ConnectOnce();
  // Sets connection_error_, if not yet known, to why the connection died.
  void NoteDeathReason();
  // Gives the commands libnbd aborted (ENOTCONN) the reason the
  // connection died, once known.
  void ExplainAborted();
  // "<name>: <op> at offset <offset> length <length>: <why>", or
  // "<name>: flush: <why>".
  [[nodiscard]] Status OpError(const char* op, uint64_t offset, uint64_t length,
                               const std::string& why) const;

  const EndpointSpec spec_;
  const Role role_;
  const NbdSettings settings_;
  const std::string dirty_bitmap_;   // "" or the bitmap's NAME
  const std::string dirty_context_;  // "" or "qemu:dirty-bitmap:NAME"
  const unsigned timeout_;           // seconds; 0: none
  std::string name_;
  EndpointInfo info_;
  // The export as the run's first connection found it (shared by every
  // connection of this endpoint, never changed): what the copy is planned
  // with. Null only while the first connection handshakes.
  std::shared_ptr<const EndpointInfo> reference_;
  // The connection's life: its handshake, established, re-established
  // (--retry), given up, hanging up (nbd_connection_state.h).
  ConnectionLife connection_;
  // A "[ CMD ]" server's or ssh's process (libnbd's child), 0: unknown.
  pid_t command_pid_ = 0;
  std::vector<std::unique_ptr<Command>> commands_;  // owns every Command
  std::vector<Command*> free_commands_;
  Clock::time_point last_heard_;        // the last sign of life from the server
  NotifyWatchdog* watchdog_ = nullptr;  // FinishConnecting's, under TLS
  // Why the connection died, once known ("" until then): the words of every
  // failure from then on. A message, not part of connection_'s state.
  std::string connection_error_;
  struct Aborted {
    size_t index;  // in completions_
    const char* op;
    uint64_t offset;
    uint64_t length;
  };
  std::vector<Aborted> aborted_;  // not yet explained
  std::vector<Command*> lost_;    // in flight when the connection died: to issue again
  unsigned failed_attempts_ = 0;  // since the connection last carried a request
  uint64_t reconnections_ = 0;
  // Last, so it closes first: closing may still run completion callbacks.
  NbdHandle handle_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_ENDPOINT_H_
