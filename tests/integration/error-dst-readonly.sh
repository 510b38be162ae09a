#!/usr/bin/env bash
# A read-only NBD destination (nbdkit -r) is refused with a clean one-line
# error naming it, "URI: the destination is read-only"; the backing file is
# unchanged.
source "$(dirname "$0")/lib/lib.sh"

size=$((2 * MiB))
make_test_file "$T/src.img" "$size"
make_random_file "$T/dst.img" "$size"
cp "$T/dst.img" "$T/dst.orig"
start_nbdkit dst -r file "$T/dst.img"

expect_fail "$NBDCOPY" "$T/src.img" "$(uri_for dst)"
[[ $ERR == "nbdcopy: $(uri_for dst): the destination is read-only" ]] ||
    fail "expected 'nbdcopy: $(uri_for dst): the destination is read-only', got '$ERR'"
stop_server dst
assert_unchanged "$T/dst.img" "$T/dst.orig" "read-only destination"
msg PASS
