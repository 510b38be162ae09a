#!/usr/bin/env bash
# A destination smaller than the source is refused before anything is
# written: clean one-line error naming both sizes in bytes, destination
# bytes unchanged.  (nbdcopy 1.14.2 does not print the sizes: it fails.)
source "$(dirname "$0")/lib.sh"

make_test_file "$T/src.img" $((2 * MiB))
make_random_file "$T/dst.img" "$MiB"
cp "$T/dst.img" "$T/dst.orig"

msg "2 MiB file -> 1 MiB nbdkit file export"
start_nbdkit dst file "$T/dst.img"
expect_fail "$NBDCOPY" "$T/src.img" "$(uri_for dst)"
stop_server dst
assert_unchanged "$T/dst.img" "$T/dst.orig" "too-small NBD destination"
assert_err_contains 2097152
assert_err_contains 1048576

msg "2 MiB nbdkit memory -> 1 MiB nbdkit memory"
start_nbdkit src memory size=2M
start_nbdkit mem memory size=1M
expect_fail "$NBDCOPY" "$(uri_for src)" "$(uri_for mem)"
assert_err_contains 2097152
assert_err_contains 1048576
msg PASS
