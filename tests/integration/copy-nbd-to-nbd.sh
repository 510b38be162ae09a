#!/usr/bin/env bash
# NBD to NBD: byte-identical, between nbdkit servers (multi-conn) and into a
# qemu-nbd raw export (no multi-conn), destination pre-filled with garbage.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit src -r file "$T/src.img"

msg "nbdkit file -> nbdkit memory"
start_nbdkit mem memory size="$size"
run_copy "$(uri_for src)" "$(uri_for mem)"
assert_nbd_equals_file "$(uri_for mem)" "$T/src.img" "nbdkit memory destination"

msg "nbdkit file -> nbdkit file pre-filled with random bytes"
make_random_file "$T/dst.img" "$size"
start_nbdkit dst file "$T/dst.img"
run_copy "$(uri_for src)" "$(uri_for dst)"
stop_server dst
assert_same_file "$T/src.img" "$T/dst.img" "pre-filled nbdkit file destination"

msg "nbdkit sparse-random -> qemu-nbd raw file pre-filled with random bytes"
size2=$((8 * MiB))
start_nbdkit sparse sparse-random size="$size2" percent=25 seed=77
nbd_to_file "$(uri_for sparse)" "$size2" "$T/expected.img"
make_random_file "$T/q.img" "$size2"
start_qemu_nbd q -f raw "$T/q.img"
run_copy "$(uri_for sparse)" "$(uri_for q)"
stop_server q
assert_same_file "$T/expected.img" "$T/q.img" "qemu-nbd raw destination"
msg PASS
