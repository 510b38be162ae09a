#!/usr/bin/env bash
# A block device that cannot hold what is written to it (a loop device over
# a sparse file on a 4 MiB tmpfs: a thin device run out of space) fails the
# copy with one line that says why, whichever way the writes go: direct
# writes fail at the write (No space left on device); with
# NBDCOPY_IO_URING=0 they go through the page cache, whose write-back
# fails after the writes returned, and the end of the copy reports it
# (Settle) instead of exiting 0 with the bytes lost. --flush reports it too.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop

make_random_file "$T/src.img" $((32 * MiB))
mkdir -p "$T/small"
mount -t tmpfs -o size=4M tmpfs "$T/small" || skip "cannot mount a tmpfs here"
MOUNTS+=("$T/small")
truncate -s $((64 * MiB)) "$T/small/backing.img"
attach_loop "$T/small/backing.img"

expect_fail "$NBDCOPY" "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: write at offset "*": No space left on device" ]] ||
    fail "direct writes: unexpected message: $ERR"

NBDCOPY_IO_URING=0 expect_fail "$NBDCOPY" "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: writing back the device's page cache: Input/output error" ]] ||
    fail "buffered writes: unexpected message: $ERR"

NBDCOPY_IO_URING=0 expect_fail "$NBDCOPY" --flush "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: flush: Input/output error" ]] ||
    fail "buffered writes, --flush: unexpected message: $ERR"

# What fits still copies, and says nothing.
head -c $((1 * MiB)) "$T/src.img" >"$T/small-src.img"
NBDCOPY_IO_URING=0 run_copy "$T/small-src.img" "$LOOPDEV"
cmp -s -n $((1 * MiB)) "$T/small-src.img" "$LOOPDEV" || fail "1 MiB: the device differs"
msg PASS
