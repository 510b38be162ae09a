// The send buffer of a connection to an NBD server over a Unix socket.
//
// On a Unix stream socket only the sender's buffer bounds what is in
// flight (the receiver's is not used), and Linux's default is 208 KiB:
// a 1 MiB write then goes out in five or more pieces, each a send of ours
// after a wake-up and a recv of the server's after one of its own. With
// room for a whole request or more, one send carries it and the server
// reads it in one recv: fewer wake-ups on both sides, on two busy cores
// (docs/performance.md, "The socket's send buffer").
//
// TCP is left alone: setting SO_SNDBUF there turns off the kernel's own
// sizing of the buffer, which grows it with the path's bandwidth-delay
// product beyond anything fixed here.
#ifndef NBDCOPY_NBD_SOCKET_BUFFER_H_
#define NBDCOPY_NBD_SOCKET_BUFFER_H_

namespace nbdcopy {

// What we ask for: room for several requests of the largest usual size
// (1 MiB). Unprivileged, the kernel caps it at net.core.wmem_max (208 KiB
// on a default Linux: no gain measured there); with CAP_NET_ADMIN it is
// granted past that limit (SO_SNDBUFFORCE). Either way the kernel reports
// twice what it grants (its own bookkeeping), and the bytes held are at
// most what the copy's budget keeps in flight on the connection.
inline constexpr int kUnixSendBuffer = 4 << 20;

// REQUIRES: fd is a connected socket, or any descriptor.
// When fd is a Unix stream socket (a local server, "[ CMD ]", the pipe to
// ssh), asks for kUnixSendBuffer (forced when privileged) unless it has as
// much already, and returns the size the kernel reports after it; else
// changes nothing and returns 0. Best effort: a refusal leaves the socket
// as it was, as a copy works either way.
int WidenUnixSendBuffer(int fd);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_SOCKET_BUFFER_H_
