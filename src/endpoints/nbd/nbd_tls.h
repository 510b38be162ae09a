// TLS as nbdcopy handles it beside libnbd: the URI query settings libnbd
// 1.14 does not read itself (tls-verify-peer=), the checks that turn its
// silent fallbacks into errors, and plain words for its TLS failures.
//
// Certificate checking (x509) needs a host name: libnbd checks the server's
// certificate against the CA in tls-certificates=DIR and the host name of an
// nbds://HOST URI. Over Unix sockets and vsock there is no host name, so
// libnbd encrypts without checking who answers; asking for that check there
// (tls-verify-peer=true) is refused rather than silently ignored.
#ifndef NBDCOPY_NBD_TLS_H_
#define NBDCOPY_NBD_TLS_H_

#include <optional>
#include <string>

#include "nbdcopy/status.h"

namespace nbdcopy {

struct UriTls {
  bool tls = false;       // an nbds scheme: TLS is required
  bool has_host = false;  // TCP (nbd:, nbds:): a host name the certificate can be checked against
  std::string host;       // has_host only: as written, "[::1]" with its brackets
  std::optional<std::string> psk_file;      // tls-psk-file=
  std::optional<std::string> certificates;  // tls-certificates=
  std::optional<bool> verify_peer;          // tls-verify-peer=
};

// Reads the scheme and the TLS query parameters of an NBD URI (values
// percent-decoded; a repeated parameter: the last wins). Fails for a
// tls-verify-peer= value that is not a boolean (true/false, yes/no, on/off,
// 1/0) and for TLS parameters that cannot apply: any of them on a plain
// nbd: URI, tls-verify-peer=true without a host name, or with a PSK.
// REQUIRES LooksLikeNbdUri(uri). No OS access.
Result<UriTls> ParseUriTls(const std::string& uri);

// What libnbd would otherwise paper over: a tls-certificates= directory
// without a readable ca-cert.pem makes libnbd fall back to the system CAs.
Status CheckTlsFiles(const UriTls& tls);

// A failed connection explained: libnbd's message, with our reading of it
// first when it is a TLS problem ("the server requires TLS: ..."). A PSK
// handshake the server ended is a key it does not have for the user, or a
// connection cut just then (the client cannot tell them apart); once the
// same credentials worked (credentials_worked: a connection after the
// run's first), it is only the cut, and libnbd's message is left alone.
std::string ExplainConnectFailure(const UriTls& tls, const std::string& libnbd_message,
                                  bool credentials_worked = false);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_TLS_H_
