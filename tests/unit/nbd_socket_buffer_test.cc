#include "endpoints/nbd/nbd_socket_buffer.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "base/unique_fd.h"

namespace nbdcopy {
namespace {

int SendBuffer(int fd) {
  int size = -1;
  socklen_t length = sizeof size;
  EXPECT_EQ(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &length), 0);
  return size;
}

// What an unprivileged process may ask for (net.core.wmem_max).
int SendBufferLimit() {
  std::ifstream in("/proc/sys/net/core/wmem_max");
  int limit = 0;
  in >> limit;
  return limit;
}

// Whether this process may set a buffer past the limit (CAP_NET_ADMIN).
bool MayForce() {
  UniqueFd probe(socket(AF_UNIX, SOCK_STREAM, 0));
  const int size = 4096;
  return setsockopt(probe.get(), SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) == 0;
}

TEST(NbdSocketBufferTest, UnixStreamSocketGetsTheLargerBuffer) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  UniqueFd a(fds[0]), b(fds[1]);
  const int before = SendBuffer(a.get());
  const int limit = SendBufferLimit();
  ASSERT_GT(limit, 0);
  const int granted = WidenUnixSendBuffer(a.get());
  EXPECT_EQ(granted, SendBuffer(a.get()));
  // Linux reports twice what it grants: all of it with CAP_NET_ADMIN, else
  // up to the limit.
  const int wanted = MayForce() ? kUnixSendBuffer : std::min(kUnixSendBuffer, limit);
  EXPECT_EQ(granted, 2 * wanted);
  EXPECT_GT(granted, before);
  EXPECT_EQ(SendBuffer(b.get()), before) << "only the socket given changes";
}

TEST(NbdSocketBufferTest, NeverShrinksALargerBuffer) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  UniqueFd a(fds[0]), b(fds[1]);
  // Only with CAP_NET_ADMIN can a buffer be made larger than ours here.
  if (!MayForce()) GTEST_SKIP() << "no CAP_NET_ADMIN to set a larger buffer";
  const int larger = 16 << 20;
  ASSERT_EQ(setsockopt(a.get(), SOL_SOCKET, SO_SNDBUFFORCE, &larger, sizeof larger), 0);
  EXPECT_EQ(WidenUnixSendBuffer(a.get()), 2 * larger);
  EXPECT_EQ(SendBuffer(a.get()), 2 * larger);
}

TEST(NbdSocketBufferTest, LeavesTcpDatagramsAndPipesAlone) {
  UniqueFd tcp(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(tcp.valid());
  const int tcp_before = SendBuffer(tcp.get());
  EXPECT_EQ(WidenUnixSendBuffer(tcp.get()), 0);
  EXPECT_EQ(SendBuffer(tcp.get()), tcp_before) << "TCP keeps the kernel's autotuning";

  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, fds), 0);
  UniqueFd a(fds[0]), b(fds[1]);
  const int datagram_before = SendBuffer(a.get());
  EXPECT_EQ(WidenUnixSendBuffer(a.get()), 0);
  EXPECT_EQ(SendBuffer(a.get()), datagram_before);

  ASSERT_EQ(pipe(fds), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  EXPECT_EQ(WidenUnixSendBuffer(write_end.get()), 0);
}

}  // namespace
}  // namespace nbdcopy
