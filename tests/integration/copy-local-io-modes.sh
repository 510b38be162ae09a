#!/usr/bin/env bash
# Local files and block devices, with io_uring (the default) and with the
# plain system calls (NBDCOPY_IO_URING=0): both copy every byte, and -v
# shows which one ran. With the ring, many requests are in flight at once.
source "$(dirname "$0")/lib.sh"

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
