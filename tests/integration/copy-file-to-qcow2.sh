#!/usr/bin/env bash
# File to qcow2, through qemu-nbd both as a [ CMD ] destination and as a
# server on a socket; read back with qemu-img convert.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img qemu-nbd

size=$((5 * MiB + 1536))   # qcow2 sizes are multiples of 512
make_test_file "$T/src.img" "$size"

msg "file -> [ qemu-nbd -f qcow2 out.qcow2 ]"
qemu-img create -q -f qcow2 "$T/out1.qcow2" "$size"
run_copy -- "$T/src.img" [ qemu-nbd -f qcow2 "$T/out1.qcow2" ]
qcow2_to_file "$T/out1.qcow2" "$T/back1.img"
assert_same_file "$T/src.img" "$T/back1.img" "qcow2 via [ qemu-nbd ]"

msg "file -> qemu-nbd -f qcow2 on a socket (qcow2 pre-filled with random data)"
make_random_file "$T/junk.img" "$size"
qemu-img convert -q -f raw -O qcow2 "$T/junk.img" "$T/out2.qcow2"
start_qemu_nbd q -f qcow2 "$T/out2.qcow2"
run_copy "$T/src.img" "$(uri_for q)"
stop_server q
qcow2_to_file "$T/out2.qcow2" "$T/back2.img"
assert_same_file "$T/src.img" "$T/back2.img" "qcow2 via qemu-nbd socket"

msg "file -> qemu-nbd -t -e 4 (multi-conn) qcow2"
qemu-img create -q -f qcow2 "$T/out3.qcow2" "$size"
start_qemu_nbd q3 -t -e 4 -f qcow2 "$T/out3.qcow2"
run_copy "$T/src.img" "$(uri_for q3)"
stop_server q3
qcow2_to_file "$T/out3.qcow2" "$T/back3.img"
assert_same_file "$T/src.img" "$T/back3.img" "qcow2 via persistent multi-conn qemu-nbd"
msg PASS
