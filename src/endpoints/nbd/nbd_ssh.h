// An nbd+ssh:// connection started: the one place that decides how. With
// libnbd >= 1.22 (its libnbd.h defines LIBNBD_ALLOW_TRANSPORT_SSH: decided
// when this file is compiled), libnbd's nbd_aio_connect_uri runs the
// tunnel; with an older libnbd (Debian 12's 1.14), nbd_aio_connect_command
// runs the same ssh command line (SshCommand) and the URI's export name,
// TLS settings and TLS user are applied to the handle as libnbd 1.22 would.
// Either way one ssh process per connection, libnbd's child, its standard
// error ours (ssh's own messages reach the user).
#ifndef NBDCOPY_NBD_SSH_H_
#define NBDCOPY_NBD_SSH_H_

#include <libnbd.h>

#include "endpoints/ssh_uri.h"

namespace nbdcopy {

// Starts connecting h through ssh; -1: libnbd refused (nbd_get_error).
int StartSshConnecting(nbd_handle* h, const SshUri& ssh);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_SSH_H_
