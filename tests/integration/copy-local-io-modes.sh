#!/usr/bin/env bash
# Local files and block devices: beside an NBD server their I/O goes through
# io_uring (the worker's poll loop never waits in a system call), or the
# plain system calls with NBDCOPY_IO_URING=0; between two local endpoints
# the plain calls (nothing else to wait for: the ring only added
# hand-overs), except into a block device, which writes past its page
# cache through the ring. Every way copies every byte, and -v shows which
# one ran (overlapped_io=, direct_writes=); with the ring, many requests
# are in flight at once.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3

size=$((24 * MiB + 1536))   # whole sectors, so a loop device holds it
make_test_file "$T/src.img" "$size"
make_random_file "$T/junk.img" "$size"
start_nbdkit src -r file "$T/src.img"
start_nbdkit dst memory size="$size"
SRC=$(uri_for src) DST=$(uri_for dst)

# expect_overlapped SIDE true|false WHAT: -v's line for SIDE (src, dst) says so.
expect_overlapped() {
    grep -q "^nbdcopy: $1: size=.* overlapped_io=$2" "$T/v.err" ||
        fail "$3: expected $1 overlapped_io=$2: $(grep "^nbdcopy: $1: size=" "$T/v.err")"
}

for opts in "" "--allocated" "-C 1 --request-size=64K" "--synchronous" "-S 0"; do
    for mode in uring plain; do
        env=()
        expect=true
        if [[ $mode == plain ]]; then env=(env NBDCOPY_IO_URING=0); expect=false; fi
        # shellcheck disable=SC2086
        {
            cp "$T/junk.img" "$T/dst.img"
            what="$mode [$opts]: nbd -> existing file"
            "${env[@]}" "$NBDCOPY" -v $opts "$SRC" "$T/dst.img" 2>"$T/v.err" ||
                fail "$what: copy failed: $(grep -v libnbd "$T/v.err" | tail -2)"
            assert_same_file "$T/src.img" "$T/dst.img" "$what"
            expect_overlapped dst "$expect" "$what"
            what="$mode [$opts]: file -> nbd"
            "${env[@]}" "$NBDCOPY" -v $opts "$T/src.img" "$DST" 2>"$T/v.err" ||
                fail "$what: copy failed: $(grep -v libnbd "$T/v.err" | tail -2)"
            assert_nbd_equals_file "$DST" "$T/src.img" "$what"
            expect_overlapped src "$expect" "$what"
        }
    done
    # Between two files: the plain calls, whatever the setting.
    cp "$T/junk.img" "$T/dst.img"
    what="[$opts]: file -> existing file"
    # shellcheck disable=SC2086
    "$NBDCOPY" -v $opts "$T/src.img" "$T/dst.img" 2>"$T/v.err" ||
        fail "$what: copy failed: $(grep -v libnbd "$T/v.err" | tail -2)"
    assert_same_file "$T/src.img" "$T/dst.img" "$what"
    expect_overlapped src false "$what"
    expect_overlapped dst false "$what"
done

# With the ring a worker keeps several requests in flight.
run_copy -v -C 1 --request-size=64K "$SRC" "$T/dst.img"
inflight=$(sed -n 's/.*max_requests_in_flight=\([0-9]*\).*/\1/p' "$T/cmd.err")
[[ ${inflight:-0} -gt 1 ]] || fail "io_uring: only ${inflight:-0} request in flight"

# A file system without nonblocking I/O (tmpfs): io_uring would hand every
# operation to a kernel thread, so writes under 64 KiB run inline and larger
# ones through the ring. A source of 4 KiB data runs between holes, and of
# long runs, takes both ways in one copy, on one and on several workers.
# (On a file system with nonblocking I/O, such as ext4, nothing runs inline.)
if [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
    shm=$(mktemp -d /dev/shm/nbdcopy-test.XXXXXX)
    at_exit 'rm -rf "$shm"'  # pass or fail
    truncate -s $((8 * MiB)) "$T/runs.img"
    # The 512 runs in one pass (a dd per run costs a process each); what
    # it does not write stays a hole.
    python3 - "$T/runs.img" <<'PY2'
import os, sys
with open(sys.argv[1], "r+b") as f:
    for off in range(0, 4 << 20, 8192):
        os.pwrite(f.fileno(), os.urandom(4096), off)
PY2
    write_random "$T/runs.img" $((5 * MiB)) $((2 * MiB + 100))
    start_nbdkit runs -r file "$T/runs.img"
    for opts in "" "-C 1" "--synchronous"; do
        rm -f "$shm/dst.img"
        msg "tmpfs destination [$opts]: small writes inline, large ones through the ring"
        # shellcheck disable=SC2086
        "$NBDCOPY" -v $opts "$(uri_for runs)" "$shm/dst.img" 2>"$T/v.err" ||
            fail "tmpfs [$opts]: copy failed: $(tail -2 "$T/v.err")"
        assert_same_file "$T/runs.img" "$shm/dst.img" "tmpfs [$opts]"
        if [[ $opts != --synchronous ]]; then
            grep -q "dst: .*overlapped_io=true inline_writes_below=65536" "$T/v.err" ||
                fail "tmpfs: expected inline_writes_below=65536: $(grep 'dst:' "$T/v.err")"
        fi
        # The holes stayed holes: 4 MiB of 4 KiB runs is 2 MiB of data.
        used=$(($(stat -c '%b * %B' "$shm/dst.img")))
        ((used <= 5 * MiB)) || fail "tmpfs [$opts]: $used bytes allocated, the holes were written"
    done
else
    msg "/dev/shm is not tmpfs: the inline-write case is left out"
fi

if [[ $(id -u) -eq 0 ]] && losetup -f >/dev/null 2>&1; then
    cp "$T/junk.img" "$T/disk.img"
    attach_loop "$T/disk.img"
    # A block-device destination writes past its page cache (O_DIRECT)
    # through the ring, whatever the source; NBDCOPY_IO_URING=0 keeps the
    # plain buffered calls.
    what="file -> block device -> file"
    run_copy -v "$T/src.img" "$LOOPDEV"
    grep -q "^nbdcopy: dst: size=.* overlapped_io=true inline_writes_below=0 direct_writes=true" \
        "$T/cmd.err" || fail "$what: expected direct writes: $(grep '^nbdcopy: dst: size' "$T/cmd.err")"
    rm -f "$T/back.img"
    run_copy "$LOOPDEV" "$T/back.img"
    assert_same_file "$T/src.img" "$T/back.img" "$what"
    for mode in uring plain; do
        env=()
        direct=true
        [[ $mode == plain ]] && env=(env NBDCOPY_IO_URING=0) direct=false
        for source in "$SRC" "$T/src.img"; do
            cp "$T/junk.img" "$T/disk.img"
            blockdev --flushbufs "$LOOPDEV"
            what="$mode: $source -> block device"
            "${env[@]}" "$NBDCOPY" -v "$source" "$LOOPDEV" 2>"$T/e" || fail "$what: $(tail -2 "$T/e")"
            cmp -s "$T/src.img" "$LOOPDEV" || fail "$what: the device differs from the source"
            grep -q "^nbdcopy: dst: size=.* direct_writes=$direct" "$T/e" ||
                fail "$what: expected direct_writes=$direct: $(grep '^nbdcopy: dst: size' "$T/e")"
        done
    done
    # Sources that end inside a sector, from a file and from a pipe: the
    # last sector keeps the device's bytes after the source's end.
    head -c $((5 * MiB + 1000)) "$T/junk.img" >"$T/odd.img"
    for how in file pipe; do
        cp "$T/src.img" "$T/disk.img"
        blockdev --flushbufs "$LOOPDEV"
        what="$how of $((5 * MiB + 1000)) bytes -> block device"
        if [[ $how == file ]]; then
            "$NBDCOPY" "$T/odd.img" "$LOOPDEV" 2>"$T/e" || fail "$what: $(cat "$T/e")"
        else
            "$NBDCOPY" - "$LOOPDEV" <"$T/odd.img" 2>"$T/e" || fail "$what: $(cat "$T/e")"
        fi
        cmp -s -n $((5 * MiB + 1000)) "$T/odd.img" "$LOOPDEV" || fail "$what: the copy differs"
        cmp -s -i $((5 * MiB + 1000)) "$T/src.img" "$LOOPDEV" ||
            fail "$what: the bytes after the source's end changed"
    done
    detach_loop "$LOOPDEV"
else
    msg "no loop device (root and losetup): the block-device cases are left out"
fi
msg PASS
