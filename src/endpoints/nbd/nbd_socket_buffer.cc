#include "endpoints/nbd/nbd_socket_buffer.h"

#include <sys/socket.h>

namespace nbdcopy {

int WidenUnixSendBuffer(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  int type = 0;
  socklen_t type_length = sizeof type;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == -1 ||
      address.ss_family != AF_UNIX ||
      getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) == -1 || type != SOCK_STREAM) {
    return 0;
  }
  int size = kUnixSendBuffer;
  // Never smaller than it is (a larger default, or one set by the admin).
  int now = 0;
  socklen_t size_length = sizeof now;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &now, &size_length) == 0 && now >= size) return now;
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  size_length = sizeof now;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &now, &size_length) == -1) return 0;
  // Capped by net.core.wmem_max: with CAP_NET_ADMIN (root, as migration
  // tools often run), past it, as systemd's fd_set_sndbuf() does; without,
  // EPERM leaves the capped size.
  if (now < 2 * size && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) == 0) {
    size_length = sizeof now;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &now, &size_length) == -1) return 0;
  }
  return now;
}

}  // namespace nbdcopy
