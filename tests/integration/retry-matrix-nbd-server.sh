#!/usr/bin/env bash
# --retry against nbd-server 3.24 (issue 21's matrix, its nbd-server
# cells): Debian's nbd-server (a config file, export "disk", flush=true;
# it advertises multi-conn; a daemon with one process per connection,
# killed as a process group) as a source or a destination, over TCP and a
# Unix socket, under each fault, in each engine (matrix_lib.bash):
#
#   cell (KIND/TRANSPORT/FAULT/ENGINE/SIDE)   the fault
#   nbd-server/tcp/close/multi/src       every open connection closed once
#   nbd-server/tcp/reset/C1/dst          one connection reset (RST)
#   nbd-server/unix/silence/sync/src     one connection silent past --timeout=2
#   nbd-server/unix/close/default/dst    every open connection closed once
#   nbd-server/unix/kill-restart-0.1s/multi/dst   nbd-server SIGKILLed (all
#                                        its processes), back 0.1 s later
#                                        on the same socket
#   nbd-server/tcp/kill-restart-1.5s/sync/src     back 1.5 s later on the
#                                        same port (the second attempt is
#                                        refused)
#
# Every cell: the copy (--retry=3, --retry=5 for the kills) succeeds and is
# identical to its source, nbd-server is alive after it, every dropped
# connection is reported lost, and --json reconnections equals the
# reconnections started and the "reconnected" lines; for a kill, the
# connections nbd-server had open (ss).
# Cells that cannot exist: nbd-server has no TLS with PSK (its TLS takes
# x509 certificates only: certfile, keyfile, cacertfile), and its x509 TLS
# does not work either: the TLS handshake succeeds, then 3.24 hangs up at
# the first option after STARTTLS (libnbd: "server disconnected
# unexpectedly" in NEWSTYLE.OPT_STRUCTURED_REPLY.RECV_REPLY; qemu-img: "Failed
# to read option reply"), so no TLS cell; no reset over a Unix socket (no
# RST).  nbd-server writes
# with pwrite (no cache of its own): a SIGKILL loses no acknowledged
# write.  The server gone for good is in checkpoint-matrix-gone.sh; the
# rest of the matrix is left to the soak (scripts/soak*.sh).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
source "$TEST_LIB/servers_lib.bash"
source "$TEST_LIB/matrix_lib.bash"
require_cmd nbd-server timeout ss

matrix_data $((24 * MiB))

proxy_cell nbd-server tcp close multi src --drop-every 3M --drop-all --drops 1
proxy_cell nbd-server tcp reset C1 dst --drop-after 6M
proxy_cell nbd-server unix silence sync src --drop-after 3M
proxy_cell nbd-server unix close default dst --drop-every 6M --drop-all --drops 1
kill_cell nbd-server unix 0.1 multi dst
kill_cell nbd-server tcp 1.5 sync src
msg PASS
