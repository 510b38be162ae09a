// Whether a connection attempt that failed before its handshake ended was
// cut (--retry re-establishes it, the run's first connection included) or
// failed for a reason another attempt cannot change (it fails at once).
//
// Cut: the server accepted the connection, then it was closed (a FIN: the
// end of the stream in the middle of a reply), reset (a RST: the recv,
// send or connect that met it; under TLS, gnutls's pull or push error or
// its "non-properly terminated"), or it fell silent past --timeout (or
// gnutls's own handshake timeout ran out). A TLS
// handshake the server ends with a FIN reads the same whether it lacks our
// key or the connection was cut just then: it is taken for the key (it
// fails at once, and the message says both).
//
// Not cut: the address refused or unreachable (connect() failed, or no
// answer to it before --timeout), an unknown host, a Unix socket path that
// does not exist, and every answer the server gave (not an NBD server,
// TLS refused or required, a certificate not trusted, no such export).
#ifndef NBDCOPY_NBD_HANDSHAKE_CUT_H_
#define NBDCOPY_NBD_HANDSHAKE_CUT_H_

#include <string>

namespace nbdcopy {

// accepted: the connection got past connect() (libnbd left its connecting
// states); why: libnbd's message, or ours for the silence limit
// ("the server sent nothing for ...") and an end of stream libnbd did not
// name ("the server closed the connection").
bool IsHandshakeCut(bool accepted, const std::string& why);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_HANDSHAKE_CUT_H_
