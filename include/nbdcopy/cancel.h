// Process-wide cancellation. SIGINT, SIGTERM and SIGHUP ask the copy to
// stop: the engines stop admitting new requests, let the ones in flight
// finish, and return CancelledStatus(); the job then closes its endpoints
// (reaping any "[ CMD ]" server) and reports how far it got.
// Thread safety: every function may be called from any thread;
// RequestCancel is also async-signal-safe.
#ifndef NBDCOPY_CANCEL_H_
#define NBDCOPY_CANCEL_H_

#include "nbdcopy/status.h"

namespace nbdcopy {

// Records the first request (signal_number > 0). Async-signal-safe.
void RequestCancel(int signal_number);

// True once RequestCancel was called. Cheap: engines call it per admission.
bool CancelRequested();

// The signal that asked first, 0 if none.
int CancelSignal();

// What an engine returns when it stopped early because of a cancel.
Status CancelledStatus();

// A copy that ended with a digest other than the one expected.
inline constexpr int kExitDigestMismatch = 3;
// A copy that finished with unreadable source ranges written as zeroes
// (--salvage): a rescued image, not a copy.
inline constexpr int kExitUnreadable = 4;

// The exit status for a run that ended with `status`: 0 on success,
// 128 + signal after a cancel (130 SIGINT, 143 SIGTERM, 129 SIGHUP),
// kExitDigestMismatch for Status::DigestMismatch, kExitUnreadable for
// Status::Unreadable, else 1.
int ExitStatusFor(const Status& status);

// Installs the handlers: SIGINT, SIGTERM and SIGHUP call RequestCancel (a
// second one ends the process at once, by that signal); SIGPIPE gets a
// handler that does nothing, so a write to a closed pipe fails with EPIPE
// and is reported like any other write error. The cancel signals interrupt
// blocking system calls (no SA_RESTART): stream reads and writes stalled
// on a pipe return CancelledStatus(); other loops retry on EINTR.
// Handlers, unlike ignored signals, are reset by exec, so "[ CMD ]"
// servers start with the default dispositions.
Status InstallCancelHandlers();

// Unit tests only: forgets any request.
void ResetCancelForTesting();

}  // namespace nbdcopy

#endif  // NBDCOPY_CANCEL_H_
