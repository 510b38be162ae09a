#include "endpoints/nbd/nbd_notify_watchdog.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>

namespace nbdcopy {
namespace {

using std::chrono::milliseconds;

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~SocketPair() {
    close(fds[0]);
    close(fds[1]);
  }
};

// The peer sees our end shut down (an end of stream) within a few seconds.
bool PeerSeesEndOfStream(int peer) {
  pollfd fd{peer, POLLIN, 0};
  if (poll(&fd, 1, 5000) != 1) return false;
  char byte;
  return recv(peer, &byte, 1, MSG_DONTWAIT) == 0;
}

TEST(NbdNotifyWatchdogTest, ANotificationPastTheLimitHasItsSocketShutDown) {
  SocketPair pair;
  NotifyWatchdog watchdog(milliseconds(20));
  watchdog.Begin(pair.fds[0]);
  EXPECT_TRUE(PeerSeesEndOfStream(pair.fds[1]));
  EXPECT_TRUE(watchdog.End());
}

TEST(NbdNotifyWatchdogTest, ANotificationThatEndsInTimeLeavesTheSocketAlone) {
  SocketPair pair;
  NotifyWatchdog watchdog(milliseconds(60000));
  for (int i = 0; i < 100; ++i) {
    watchdog.Begin(pair.fds[0]);
    EXPECT_FALSE(watchdog.End());
  }
  const char byte = 'x';
  ASSERT_EQ(send(pair.fds[0], &byte, 1, 0), 1);
  char got = 0;
  ASSERT_EQ(recv(pair.fds[1], &got, 1, 0), 1);
  EXPECT_EQ(got, 'x');
}

// Each notification has its own limit: one that fired says so once, and
// the next one starts afresh.
TEST(NbdNotifyWatchdogTest, EachNotificationIsWatchedOnItsOwn) {
  SocketPair first;
  SocketPair second;
  NotifyWatchdog watchdog(milliseconds(20));
  watchdog.Begin(first.fds[0]);
  EXPECT_TRUE(PeerSeesEndOfStream(first.fds[1]));
  EXPECT_TRUE(watchdog.End());
  watchdog.Begin(second.fds[0]);
  EXPECT_TRUE(PeerSeesEndOfStream(second.fds[1]));
  EXPECT_TRUE(watchdog.End());
}

}  // namespace
}  // namespace nbdcopy
