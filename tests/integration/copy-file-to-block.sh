#!/usr/bin/env bash
# File to a block device (loop over a file full of random bytes):
# byte-identical, zero ranges really zeroed; a smaller source into a larger
# device leaves the tail of the device untouched.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop

size=$((6 * MiB + 1536))
make_test_file "$T/src.img" "$size"

msg "file -> loop device of the same size"
make_random_file "$T/backing.img" "$size"
attach_loop "$T/backing.img"
run_copy "$T/src.img" "$LOOPDEV"
cmp -s "$T/src.img" "$LOOPDEV" || fail "device content differs"
detach_loop "$LOOPDEV"
assert_same_file "$T/src.img" "$T/backing.img" "loop backing file"

msg "smaller file -> larger loop device"
make_random_file "$T/big.img" $((size + 2 * MiB))
cp "$T/big.img" "$T/big.orig"
attach_loop "$T/big.img"
run_copy "$T/src.img" "$LOOPDEV"
detach_loop "$LOOPDEV"
cmp -s -n "$size" "$T/src.img" "$T/big.img" || fail "copied prefix differs"
cmp -s -i "$size" "$T/big.orig" "$T/big.img" || fail "tail of the device was modified"
msg PASS
