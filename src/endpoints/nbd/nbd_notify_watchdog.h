// A watch on one libnbd notification at a time, for the handshake.
// libnbd 1.14 can stay inside a single nbd_aio_notify_read for a long
// time: in a TLS handshake, gnutls_handshake spins on a silent socket
// until gnutls's own 40 s limit, and no poll(2) of ours runs meanwhile,
// so --timeout cannot act. The watchdog, a thread of its own, shuts the
// socket down once one notification has lasted longer than the silence
// limit: the call then meets the end of the stream and returns, and the
// caller reports the silence (and --retry takes it as a cut). It watches
// the notifications only: where the server's bytes are there at once
// (loopback, Unix sockets), libnbd runs the whole handshake inside
// nbd_aio_connect_uri, before there is a socket we know of, and gnutls's
// 40 s stays the limit.
// Thread safety: Begin and End on the connecting thread; the watchdog's
// thread only shuts the socket down, under the lock, while a
// notification that began on that very socket still runs.
#ifndef NBDCOPY_NBD_NOTIFY_WATCHDOG_H_
#define NBDCOPY_NBD_NOTIFY_WATCHDOG_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/clock.h"

namespace nbdcopy {

class NotifyWatchdog {
 public:
  // REQUIRES limit > 0.
  explicit NotifyWatchdog(std::chrono::milliseconds limit);
  ~NotifyWatchdog();  // stops and joins the thread
  NotifyWatchdog(const NotifyWatchdog&) = delete;
  NotifyWatchdog& operator=(const NotifyWatchdog&) = delete;

  // A notification on socket fd begins. REQUIRES none is under way.
  void Begin(int fd);
  // It ended; true if the watchdog shut its socket down meanwhile.
  bool End();

 private:
  void Watch();

  const std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable changed_;
  // Guarded by mutex_:
  bool stop_ = false;
  int fd_ = -1;      // the socket of the notification under way, -1: none
  ino_t inode_ = 0;  // fd_'s inode when it began: never another socket
  Clock::time_point since_;
  bool fired_ = false;
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_NOTIFY_WATCHDOG_H_
