#include "nbdcopy/cancel.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace nbdcopy {

namespace {

// Lock-free, so safe to touch from a signal handler.
std::atomic<int> cancel_signal{0};
std::atomic<int64_t> cancel_time_ns{0};  // CLOCK_MONOTONIC of the first cancel signal
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<int64_t>::is_always_lock_free);

// A repeat this soon is the same request delivered twice: GNU timeout, for
// one, signals both the command and its process group.
constexpr int64_t kSameRequestNs = 1'000'000'000;

int64_t MonotonicNs() {  // clock_gettime is async-signal-safe
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

constexpr int kExitFailure = 1;
constexpr int kExitSignalBase = 128;

void OnCancelSignal(int signal_number) {
  int expected = 0;
  if (cancel_signal.compare_exchange_strong(expected, signal_number)) {
    cancel_time_ns.store(MonotonicNs());
    return;
  }
  // (0: the first is still being recorded, by a handler this one interrupted.)
  const int64_t first = cancel_time_ns.load();
  if (first == 0 || MonotonicNs() - first < kSameRequestNs) return;
  // Asked again: the user does not want to wait for requests in flight.
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

void IgnoreSignal(int) {}

}  // namespace

void RequestCancel(int signal_number) {
  int expected = 0;
  if (cancel_signal.compare_exchange_strong(expected, signal_number)) {
    cancel_time_ns.store(MonotonicNs());
  }
}

bool CancelRequested() { return cancel_signal.load(std::memory_order_relaxed) != 0; }

int CancelSignal() { return cancel_signal.load(); }

Status CancelledStatus() { return Status::Error("interrupted"); }

int ExitStatusFor(const Status& status) {
  if (status.ok()) return 0;
  int signal_number = CancelSignal();
  if (signal_number != 0) return kExitSignalBase + signal_number;
  if (status.digest_mismatch()) return kExitDigestMismatch;
  return status.unreadable() ? kExitUnreadable : kExitFailure;
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

void ResetCancelForTesting() {
  cancel_signal.store(0);
  cancel_time_ns.store(0);
}

}  // namespace nbdcopy
