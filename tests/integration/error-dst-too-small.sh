#!/usr/bin/env bash
# A destination smaller than the source is refused before anything is
# written: clean one-line error, libnbd's "destination size is smaller than
# source size" then the destination and both sizes in bytes; destination
# bytes unchanged.  (nbdcopy 1.14.2 does not print the sizes: it fails.)
source "$(dirname "$0")/lib/lib.sh"

make_test_file "$T/src.img" $((2 * MiB))
make_random_file "$T/dst.img" "$MiB"
cp "$T/dst.img" "$T/dst.orig"

msg "2 MiB file -> 1 MiB nbdkit file export"
start_nbdkit dst file "$T/dst.img"
expect_fail "$NBDCOPY" "$T/src.img" "$(uri_for dst)"
stop_server dst
assert_unchanged "$T/dst.img" "$T/dst.orig" "too-small NBD destination"
too_small() { # URI: the message for a 2 MiB source onto 1 MiB at URI
    echo "nbdcopy: error: destination size is smaller than source size ($1: source 2097152 bytes, destination 1048576 bytes)"
}
[[ $ERR == "$(too_small "$(uri_for dst)")" ]] || fail "expected '$(too_small "$(uri_for dst)")'"

msg "2 MiB nbdkit memory -> 1 MiB nbdkit memory"
start_nbdkit src memory size=2M
start_nbdkit mem memory size=1M
expect_fail "$NBDCOPY" "$(uri_for src)" "$(uri_for mem)"
[[ $ERR == "$(too_small "$(uri_for mem)")" ]] || fail "expected '$(too_small "$(uri_for mem)")'"
msg PASS
