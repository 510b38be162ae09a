// nbd+ssh:// and nbds+ssh:// URIs, as libnbd 1.22 reads them
// (nbd_connect_uri(3), lib/uri.c): the authority names the ssh server and
// its port (22), and the server runs "nc -U PATH" (?socket=PATH) or
// "nc localhost 10809" for us, its standard input and output the NBD
// connection: "ssh -p PORT HOST nc ...". The URI's user is the TLS user
// name; libnbd never gives it to ssh (ssh logs in as its configuration
// says). nbds+ssh requires TLS inside the tunnel.
//
// Refused here, before anything runs, what ssh or the remote shell would
// read as something else: a host (or user) starting with '-' (ssh reads
// "-oProxyCommand=CMD" as an option and runs CMD; libnbd 1.22 passes it),
// a host that is not a host name (ssh's %h expansions would carry shell
// characters), a port that is not a number, a NUL byte (%00). The socket
// path reaches the remote shell: it is quoted (ShellWord), so that a path
// with blanks or shell characters is one path.
// Thread safety: pure functions, no OS access.
#ifndef NBDCOPY_ENDPOINTS_SSH_URI_H_
#define NBDCOPY_ENDPOINTS_SSH_URI_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nbdcopy/status.h"

namespace nbdcopy {

struct SshUri {
  bool tls = false;  // nbds+ssh: TLS required through the tunnel
  std::string
      host;  // as ssh gets it: a host name, IPv4 address or "[IPv6]" (brackets kept, as libnbd)
  unsigned port = 22;                 // the ssh server's port
  std::string tls_user;               // the URI's user (password dropped): libnbd's TLS user name
  std::string export_name;            // the path without its first '/', decoded
  std::optional<std::string> socket;  // ?socket=: the remote Unix socket; else port 10809 there
  // The other query parameters (tls-psk-file=...), decoded, in order.
  std::vector<std::pair<std::string, std::string>> parameters;
};

// True for "nbd+ssh:" and "nbds+ssh:".
bool IsSshUri(const std::string& text);

// The URI read and checked; the error says what is wrong (the caller adds
// the URI). REQUIRES IsSshUri(uri).
Result<SshUri> ParseSshUri(const std::string& uri);

// The tunnel's command line, word for word libnbd 1.22's:
// ssh -p PORT HOST nc -U PATH  |  ssh -p PORT HOST nc localhost 10809
// (PATH quoted for the remote shell when it needs to be).
std::vector<std::string> SshCommand(const SshUri& ssh);

// The URI that makes libnbd >= 1.22 run SshCommand(ssh) and set up the
// rest as ssh says: every part percent-encoded, the socket parameter
// already quoted for the remote shell, no password.
std::string LibnbdSshUri(const SshUri& ssh);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENDPOINTS_SSH_URI_H_
