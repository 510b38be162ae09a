#!/usr/bin/env bash
# stdin (a pipe, size unknown) to NBD: byte-identical prefix; the rest of a
# larger destination is left as it was.
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "pipe -> nbdkit memory of the same size"
start_nbdkit mem memory size="$size"
run_copy - "$(uri_for mem)" < <(cat "$T/src.img")
assert_nbd_equals_file "$(uri_for mem)" "$T/src.img" "stdin -> nbd"

msg "pipe -> nbdkit file 1 MiB larger, pre-filled with random bytes"
make_random_file "$T/dst.img" $((size + MiB))
cp "$T/dst.img" "$T/dst.orig"
start_nbdkit fdst file "$T/dst.img"
run_copy - "$(uri_for fdst)" < <(cat "$T/src.img")
stop_server fdst
cmp -s -n "$size" "$T/src.img" "$T/dst.img" || fail "copied prefix differs"
cmp -s -i "$size" "$T/dst.orig" "$T/dst.img" || fail "tail beyond the data was modified"
msg PASS
