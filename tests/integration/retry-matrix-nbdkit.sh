#!/usr/bin/env bash
# --retry against nbdkit (issue 21's matrix, its nbdkit cells): nbdkit -t 1
# with the file plugin as a source or a destination, and as a destination
# the file plugin behind --filter=cache cache=writeback (what it
# acknowledged stays in its cache until a flush: a SIGKILL loses every
# write it had not flushed), over TCP, a Unix socket and TLS (PSK), under
# each fault, in each engine (matrix_lib.bash):
#
#   cell (KIND/TRANSPORT/FAULT/ENGINE/SIDE)     the fault
#   nbdkit/unix/close/multi/src           every open connection closed once
#   nbdkit/tcp/reset/C1/src               one connection reset (RST)
#   nbdkit/tls/silence/sync/dst           one connection silent past --timeout=2
#   nbdkit-writeback/unix/close/default/dst   one connection closed
#   nbdkit-writeback/tcp/kill-restart-0.2s/multi/dst   nbdkit SIGKILLed
#                                         mid-copy, its unflushed writes
#                                         lost, back 0.2 s later on the
#                                         same port: they are written again
#   nbdkit-writeback/tls/kill-restart-0.5s/sync/dst    the same under TLS
#   nbdkit/unix/kill-restart-0.1s/C1/src  a source killed, back on the
#                                         same socket
#
# Every cell: the copy (--retry=3, --retry=5 for the kills) succeeds and is
# identical to its source (the destination's file, read while the server
# runs: --retry flushed it at the end), nbdkit is alive after it, every
# dropped connection is reported lost, and --json reconnections equals
# the reconnections started and the "reconnected" lines; for a kill, the
# connections nbdkit had open (ss).  -t 1: nbdkit 1.32.5 with several
# threads sometimes aborts when a connection drops (raw_send_socket:
# "Assertion `sock >= 0' failed"); if it dies anyway the cell fails saying
# the server died, not nbdcopy.  No reset over a Unix socket (no RST).
# The server gone for good is in checkpoint-matrix-gone.sh; the rest of
# the matrix is left to the soak (scripts/soak*.sh).
# labels: tls
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
source "$TEST_LIB/servers_lib.bash"
source "$TEST_LIB/matrix_lib.bash"
require_cmd nbdkit timeout ss
make_psk

matrix_data $((24 * MiB))

proxy_cell nbdkit unix close multi src --drop-every 3M --drop-all --drops 1
proxy_cell nbdkit tcp reset C1 src --drop-after 3M
proxy_cell nbdkit tls silence sync dst --drop-after 6M
proxy_cell nbdkit-writeback unix close default dst --drop-after 6M
kill_cell nbdkit-writeback tcp 0.2 multi dst
kill_cell nbdkit-writeback tls 0.5 sync dst
kill_cell nbdkit unix 0.1 C1 src
msg PASS
