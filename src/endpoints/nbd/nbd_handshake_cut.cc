#include "endpoints/nbd/nbd_handshake_cut.h"

#include <algorithm>
#include <string_view>

namespace nbdcopy {

namespace {

// The words of a connection that ended under a client that had it: they
// can only come from a socket that was connected (a failed connect() says
// "connect: ..."), so they need no `accepted` (libnbd may connect and meet
// the end of the stream within one call, never seen between the two).
constexpr std::string_view kCutWords[] = {
    "server disconnected unexpectedly",  // libnbd: recv() returned 0
    "server closed socket unexpectedly",
    // A reset met by recv, send, or by connect() itself: there it is the
    // socket's error after the handshake of TCP completed (a refusal is
    // ECONNREFUSED), read by libnbd before it saw the connection open.
    "Connection reset by peer",
    "send: Broken pipe",
    "recv: Connection timed out",  // TCP keepalive or retransmissions gave up
    "send: Connection timed out",
    "non-properly terminated",     // gnutls: the end of the stream under TLS
    "Error in the pull function",  // gnutls: recv() failed under TLS
    "Error in the push function",  // gnutls: send() failed under TLS
    "The operation timed out",     // gnutls: silence in its handshake
    "the server closed the connection",
};

// A server that ends the TLS handshake itself (a FIN, no alert) refused
// our key or certificate, as far as we can tell: nbdkit and qemu-nbd do
// that for a PSK they do not have. A cut in those few milliseconds reads
// the same and is taken for it; a reset there is a cut.
constexpr std::string_view kTlsHandshake = "gnutls_handshake";
constexpr std::string_view kTlsEnded = "non-properly terminated";

// Our silence limit: a cut once the server accepted; before, an address
// that does not answer (unreachable).
constexpr std::string_view kSilence = "the server sent nothing for";

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

bool IsHandshakeCut(bool accepted, const std::string& why) {
  if (Contains(why, kSilence)) return accepted;
  if (Contains(why, kTlsHandshake) && Contains(why, kTlsEnded)) return false;
  return std::any_of(std::begin(kCutWords), std::end(kCutWords),
                     [&why](std::string_view words) { return Contains(why, words); });
}

}  // namespace nbdcopy
