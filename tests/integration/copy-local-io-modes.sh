#!/usr/bin/env bash
# Local files and block devices, with io_uring (the default) and with the
# plain system calls (NBDCOPY_IO_URING=0): both copy every byte, and -v
# shows which one ran. With the ring, many requests are in flight at once.
# labels: root
source "$(dirname "$0")/lib/lib.sh"

size=$((24 * MiB + 1536))   # whole sectors, so a loop device holds it
make_test_file "$T/src.img" "$size"
make_random_file "$T/junk.img" "$size"

for mode in uring plain; do
    env=()
    expect=true
    if [[ $mode == plain ]]; then env=(NBDCOPY_IO_URING=0); expect=false; fi
    for opts in "" "--allocated" "-C 1 --request-size=64K" "--synchronous" "-S 0"; do
        cp "$T/junk.img" "$T/dst.img"
        msg "$mode [$opts]: file -> existing file"
        # shellcheck disable=SC2086
        env "${env[@]}" "$NBDCOPY" -v $opts "$T/src.img" "$T/dst.img" 2>"$T/v.err" ||
            fail "$mode [$opts]: copy failed: $(grep -v libnbd "$T/v.err" | tail -2)"
        assert_same_file "$T/src.img" "$T/dst.img" "$mode [$opts]"
        grep -q "dst: size=$size .*overlapped_io=$expect" "$T/v.err" ||
            fail "$mode: expected overlapped_io=$expect: $(grep 'dst:' "$T/v.err")"
    done
    # With the ring a worker keeps several requests in flight.
    if [[ $mode == uring ]]; then
        run_copy -v -C 1 --request-size=64K "$T/src.img" "$T/dst.img"
        inflight=$(sed -n 's/.*max_requests_in_flight=\([0-9]*\).*/\1/p' "$T/cmd.err")
        [[ ${inflight:-0} -gt 1 ]] || fail "io_uring: only ${inflight:-0} request in flight"
    fi
done

# A file system without nonblocking I/O (tmpfs): io_uring would hand every
# operation to a kernel thread, so writes under 64 KiB run inline and larger
# ones through the ring. A source of 4 KiB data runs between holes, and of
# long runs, takes both ways in one copy, on one and on several workers.
# (On a file system with nonblocking I/O, such as ext4, nothing runs inline.)
if [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
    shm=$(mktemp -d /dev/shm/nbdcopy-test.XXXXXX)
    at_exit 'rm -rf "$shm"'  # pass or fail
    truncate -s $((8 * MiB)) "$T/runs.img"
    for ((off = 0; off < 4 * MiB; off += 8192)); do echo "$off"; done |
        while read -r off; do write_random "$T/runs.img" "$off" 4096; done
    write_random "$T/runs.img" $((5 * MiB)) $((2 * MiB + 100))
    for opts in "" "-C 1" "--synchronous"; do
        rm -f "$shm/dst.img"
        msg "tmpfs destination [$opts]: small writes inline, large ones through the ring"
        # shellcheck disable=SC2086
        "$NBDCOPY" -v $opts "$T/runs.img" "$shm/dst.img" 2>"$T/v.err" ||
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
    for mode in uring plain; do
        env=()
        [[ $mode == plain ]] && env=(NBDCOPY_IO_URING=0)
        cp "$T/junk.img" "$T/disk.img"
        attach_loop "$T/disk.img"
        msg "$mode: file -> block device -> file"
        env "${env[@]}" "$NBDCOPY" "$T/src.img" "$LOOPDEV" 2>"$T/e" || fail "to device: $(cat "$T/e")"
        rm -f "$T/back.img"
        env "${env[@]}" "$NBDCOPY" "$LOOPDEV" "$T/back.img" 2>"$T/e" || fail "from device: $(cat "$T/e")"
        detach_loop "$LOOPDEV"
        assert_same_file "$T/src.img" "$T/back.img" "$mode: through a block device"
    done
fi
msg PASS
