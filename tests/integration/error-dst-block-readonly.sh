#!/usr/bin/env bash
# A read-only block device (losetup -r) as destination is refused up front
# with a clean one-line error naming the device and saying it is read-only
# (not a failed first write), and is left untouched.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop

size=$((2 * MiB))
make_random_file "$T/src.img" "$size"
make_random_file "$T/backing.img" "$size"
cp "$T/backing.img" "$T/backing.orig"
attach_loop "$T/backing.img" -r

expect_fail "$NBDCOPY" "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: the destination is read-only" ]] || fail "unexpected message: $ERR"
detach_loop "$LOOPDEV"
assert_unchanged "$T/backing.img" "$T/backing.orig" "read-only loop device"
msg PASS
