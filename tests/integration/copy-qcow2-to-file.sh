#!/usr/bin/env bash
# qcow2 to file through qemu-nbd, as [ CMD ] and as a socket server:
# byte-identical to qemu-img's own conversion of the image.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img qemu-nbd

size=$((5 * MiB + 1536))
make_test_file "$T/src.img" "$size"
qemu-img convert -q -c -f raw -O qcow2 "$T/src.img" "$T/src.qcow2"   # compressed

msg "[ qemu-nbd -r -f qcow2 ] -> file"
run_copy -- [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] "$T/out1.img"
assert_same_file "$T/src.img" "$T/out1.img" "qcow2 via [ qemu-nbd ]"

msg "qemu-nbd -r -f qcow2 on a socket -> file"
start_qemu_nbd q -r -f qcow2 "$T/src.qcow2"
run_copy "$(uri_for q)" "$T/out2.img"
assert_same_file "$T/src.img" "$T/out2.img" "qcow2 via qemu-nbd socket"

msg "qcow2 overlay (backing file + one written cluster) -> file"
qemu-img create -q -f qcow2 -b "$T/src.qcow2" -F qcow2 "$T/top.qcow2"
qemu-io -f qcow2 -c "write -P 0x5a 1M 64k" "$T/top.qcow2" >/dev/null ||
    fail "qemu-io write failed"
qemu-img convert -q -f qcow2 -O raw "$T/top.qcow2" "$T/expected3.img"
run_copy -- [ qemu-nbd -r -f qcow2 "$T/top.qcow2" ] "$T/out3.img"
assert_same_file "$T/expected3.img" "$T/out3.img" "qcow2 overlay via [ qemu-nbd ]"
msg PASS
