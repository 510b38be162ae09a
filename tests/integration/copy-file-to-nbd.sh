#!/usr/bin/env bash
# File to NBD: byte-identical.  Once into a fresh nbdkit memory export, once
# into an export pre-filled with random bytes (so zero ranges and holes in
# the source must really be zeroed on the destination).
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "file -> nbdkit memory"
start_nbdkit mem memory size="$size"
run_copy "$T/src.img" "$(uri_for mem)"
assert_nbd_equals_file "$(uri_for mem)" "$T/src.img" "nbdkit memory destination"

msg "file -> nbdkit file (destination pre-filled with random bytes)"
make_random_file "$T/dst.img" "$size"
start_nbdkit fdst file "$T/dst.img"
run_copy "$T/src.img" "$(uri_for fdst)"
stop_server fdst
assert_same_file "$T/src.img" "$T/dst.img" "pre-filled nbdkit file destination"
msg PASS
