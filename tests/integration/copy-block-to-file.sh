#!/usr/bin/env bash
# Block device (loop, read-only and read-write) to a file: byte-identical
# and the destination file gets the device's size.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop

size=$((6 * MiB + 1536))   # loop devices have 512-byte granularity
make_test_file "$T/backing.img" "$size"

msg "read-write loop device -> file"
attach_loop "$T/backing.img"
run_copy "$LOOPDEV" "$T/out1.img"
assert_same_file "$T/backing.img" "$T/out1.img" "copy of $LOOPDEV"

msg "read-only loop device -> file"
attach_loop "$T/backing.img" -r
run_copy "$LOOPDEV" "$T/out2.img"
assert_same_file "$T/backing.img" "$T/out2.img" "copy of read-only $LOOPDEV"
msg PASS
