#include "endpoints/nbd/nbd_socket_buffer.h"

#include <sys/socket.h>

#include <algorithm>

namespace nbdcopy {

namespace {

// A socket option's integer value; -1 when fd is no socket or it fails.
int IntOption(int fd, int option) {
  int value = 0;
  socklen_t length = sizeof value;
  return getsockopt(fd, SOL_SOCKET, option, &value, &length) == 0 ? value : -1;
}

}  // namespace

int WidenUnixSendBuffer(int fd) {
  if (IntOption(fd, SO_DOMAIN) != AF_UNIX || IntOption(fd, SO_TYPE) != SOCK_STREAM) return 0;
  // The kernel reports twice what it grants: never shrink a buffer already
  // as large (a larger default, or one the admin set).
  const int wanted = 2 * kUnixSendBuffer;
  if (const int now = IntOption(fd, SO_SNDBUF); now >= wanted) return now;
  const int size = kUnixSendBuffer;
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  // Capped by net.core.wmem_max: with CAP_NET_ADMIN (root, as migration
  // tools often run), past it, as systemd's fd_set_sndbuf() does; without,
  // EPERM leaves the capped size.
  if (IntOption(fd, SO_SNDBUF) < wanted) {
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
  }
  return std::max(IntOption(fd, SO_SNDBUF), 0);
}

}  // namespace nbdcopy
