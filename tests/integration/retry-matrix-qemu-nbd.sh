#!/usr/bin/env bash
# --retry against qemu-nbd (issue 21's matrix, its qemu-nbd cells): qemu-nbd
# -t --shared=0 serving raw and qcow2 images (multi-conn), the source or the
# destination of a copy, over TCP, a Unix socket and TLS (PSK, on TCP and
# on a Unix socket), under each fault, in each engine (matrix_lib.bash):
#
#   cell (KIND/TRANSPORT/FAULT/ENGINE/SIDE)   the fault
#   qemu-raw/tcp/close/multi/src        every open connection closed once
#   qemu-raw/tcp/reset/default/dst      one connection reset (RST)
#   qemu-raw/unix/silence/C1/src        one connection silent past --timeout=2
#   qemu-raw/tls/close/multi/dst        every open connection closed once
#   qemu-qcow2/tls-unix/close/sync/src  one connection closed
#   qemu-qcow2/tcp/reset/multi/dst      two connections reset, one by one
#   qemu-raw/tls/handshake-cut/multi/src   the TLS handshake of a connection
#                                       after the first (opened when its
#                                       worker first meets data) cut after
#                                       200 bytes: under --retry as well
#   qemu-raw/unix/kill-restart-0.1s/multi/src   qemu-nbd SIGKILLed, back
#                                       0.1 s later on the same socket
#   qemu-qcow2/tcp/kill-restart-0.3s/multi/dst  the same on TCP: a qcow2
#                                       destination loses the metadata it
#                                       had not flushed (written again)
#   qemu-raw/tls/kill-restart-0.5s/C1/dst       back 0.5 s later (TLS:
#                                       qemu-nbd takes ~0.7 s to listen)
#
# Every cell: the copy (--retry=3, --retry=5 for the kills) succeeds and is
# identical to its source (a qcow2 read back by qemu-img), qemu-nbd is
# alive after it, every dropped connection is reported lost, and --json
# reconnections equals the reconnections started and the "reconnected"
# lines; for a kill, the connections qemu-nbd had open (ss).  A reset has
# no Unix-socket cell: a Unix socket has no RST.  The server gone for good
# is in checkpoint-matrix-gone.sh; the other cells of the matrix (longer
# outages, every combination) are left to the soak (scripts/soak*.sh).
# labels: tls
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
source "$TEST_LIB/servers_lib.bash"
source "$TEST_LIB/matrix_lib.bash"
require_cmd qemu-nbd qemu-img timeout ss
# The cells in three parts side by side (run_parts): each part has its own
# servers and proxies; the data is made once, here, and each part links it
# into its own directory (matrix_data, MATRIX_DATA_DIR).
if [[ -z ${TEST_PART:-} ]]; then
    matrix_data $((24 * MiB)) # a source reads ~14 MiB (data, zeroes), a destination gets 24
    export MATRIX_DATA_DIR=$T
fi
run_parts drops silence-cut kills
make_psk

matrix_data $((24 * MiB))

if in_part drops; then
    proxy_cell qemu-raw tcp close multi src --drop-every 3M --drop-all --drops 1
    proxy_cell qemu-raw tcp reset default dst --drop-after 6M
    proxy_cell qemu-raw tls close multi dst --drop-every 6M --drop-all --drops 1
    proxy_cell qemu-qcow2 tls-unix close sync src --drop-after 3M
    proxy_cell qemu-qcow2 tcp reset multi dst --drop-after 3M --drops 2
fi
if in_part silence-cut; then
    proxy_cell qemu-raw unix silence C1 src --drop-after 3M
    proxy_cell qemu-raw tls close:handshake-cut multi src --first-conn 2 --drop-after 200 --drops 1
fi
if in_part kills; then
    kill_cell qemu-raw unix 0.1 multi src
    kill_cell qemu-qcow2 tcp 0.3 multi dst
    kill_cell qemu-raw tls 0.5 C1 dst
fi
msg PASS
