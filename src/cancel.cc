#include "nbdcopy/cancel.h"

#include <errno.h>
#include <signal.h>

#include <atomic>

namespace nbdcopy {

namespace {

// Lock-free, so safe to touch from a signal handler.
std::atomic<int> cancel_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int kExitFailure = 1;
constexpr int kExitSignalBase = 128;

void OnCancelSignal(int signal_number) {
  int expected = 0;
  if (cancel_signal.compare_exchange_strong(expected, signal_number)) return;
  // Asked twice: the user does not want to wait for requests in flight.
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

void IgnoreSignal(int) {}

}  // namespace

void RequestCancel(int signal_number) {
  int expected = 0;
  cancel_signal.compare_exchange_strong(expected, signal_number);
}

bool CancelRequested() { return cancel_signal.load(std::memory_order_relaxed) != 0; }

int CancelSignal() { return cancel_signal.load(); }

Status CancelledStatus() { return Status::Error("interrupted", EINTR); }

int ExitStatusFor(const Status& status) {
  if (status.ok()) return 0;
  int signal_number = CancelSignal();
  return signal_number != 0 ? kExitSignalBase + signal_number : kExitFailure;
}

Status InstallCancelHandlers() {
  struct sigaction action = {};
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    bool cancels = signal_number != SIGPIPE;
    action.sa_handler = cancels ? OnCancelSignal : IgnoreSignal;
    // No SA_RESTART for a cancel: a read or write blocked on a stalled pipe
    // returns EINTR, and the stream endpoint then stops.
    action.sa_flags = cancels ? 0 : SA_RESTART;
    if (sigaction(signal_number, &action, nullptr) == -1) {
      return Status::FromErrno("sigaction", errno);
    }
  }
  return Status::Ok();
}

void ResetCancelForTesting() { cancel_signal.store(0); }

}  // namespace nbdcopy
