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

# What fits copies, and says nothing: first on the empty device.
head -c $((1 * MiB)) "$T/src.img" >"$T/small-src.img"
NBDCOPY_IO_URING=0 run_copy "$T/small-src.img" "$LOOPDEV"
cmp -s -n $((1 * MiB)) "$T/small-src.img" "$LOOPDEV" || fail "1 MiB, empty device: the device differs"

expect_fail "$NBDCOPY" "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: write at offset "*": No space left on device" ]] ||
    fail "direct writes: unexpected message: $ERR"

NBDCOPY_IO_URING=0 expect_fail "$NBDCOPY" "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: writing back the device's page cache: Input/output error" ]] ||
    fail "buffered writes: unexpected message: $ERR"

NBDCOPY_IO_URING=0 expect_fail "$NBDCOPY" --flush "$T/src.img" "$LOOPDEV"
[[ $ERR == "nbdcopy: $LOOPDEV: flush: Input/output error" ]] ||
    fail "buffered writes, --flush: unexpected message: $ERR"

# After the failures, with the space given back, what fits copies again: a
# write-back error of an earlier copy is not reported by a later one. Which
# blocks the failed copies left allocated depends on the order the writes
# reached the full tmpfs, so the space is freed first (punching the backing
# file's hole), and the device's stale cached pages are dropped.
fallocate --punch-hole --offset 0 --length $((64 * MiB)) "$T/small/backing.img" ||
    skip "cannot punch a hole in a tmpfs file here"
blockdev --flushbufs "$LOOPDEV"
NBDCOPY_IO_URING=0 run_copy "$T/small-src.img" "$LOOPDEV"
cmp -s -n $((1 * MiB)) "$T/small-src.img" "$LOOPDEV" || fail "1 MiB after the failures: the device differs"
run_copy "$T/small-src.img" "$LOOPDEV"
cmp -s -n $((1 * MiB)) "$T/small-src.img" "$LOOPDEV" || fail "1 MiB direct, after the failures: the device differs"
msg PASS
