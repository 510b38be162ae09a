#!/usr/bin/env bash
# Hostile block-status replies (hostile_nbd_server.py as the source).
# Block status is advice: a reply that is wrong in a way we can see
# (extents past the end of the export or of the request, zero-length
# extents, empty chunks, a wrong context id, a second chunk for the same
# context, an error, a server that describes 512 bytes per reply) must
# never turn data into zeroes. Each such copy, with the parallel and the
# synchronous engine, ends within the watchdog and is byte-identical to the
# source. The lies in bs-past-range (zeroes past the request) and
# bs-two-chunks (a second chunk claiming everything is zero) would corrupt
# the copy if believed. Replies that libnbd itself rejects kill the
# connection: those copies fail with libnbd's reason in the one-line
# message, and what they wrote is the source's data.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3 timeout

size=$((4 * MiB))
make_test_file "$T/src.img" "$size"
src="nbd+unix:///?socket=$T/src.sock" # (start_hostile src listens there)

for engine in parallel synchronous; do
    opts=(--timeout=5)
    [[ $engine == synchronous ]] && opts+=(--synchronous)
    for fault in bs-past-end bs-past-range bs-zero-length bs-zero-length-only bs-tiny \
                 bs-wrong-context bs-two-chunks bs-error; do
        msg "$fault ($engine): the copy is correct"
        start_hostile src "$T/src.img" --readonly --fault "$fault"
        # (A new file each time, in place of rm -f: one fork less a case.)
        out=$T/out-$fault-$engine.img
        expect_copy_ok "${opts[@]}" "$src" "$out"
        # (cmp -s also fails on a size difference: "EOF on ...".)
        cmp -s "$T/src.img" "$out" ||
            fail "$fault ($engine): content differs ($(cmp "$T/src.img" "$out" 2>&1 | head -1))"
        stop_server src
    done

    # libnbd 1.14 kills the connection: the copy fails with its reason.
    # From 1.16 on libnbd skips a chunk of a bad length (the query fails
    # with EPROTO: that range is copied as data, as after bs-error) and a
    # reply to a cookie not in flight (its header: the stream then falls
    # out of step, a bad magic number, or the query never completes).
    failing=("bs-empty:invalid length in NBD_REPLY_TYPE_BLOCK_STATUS"
             "bs-unknown-cookie:no matching cookie found for server reply")
    if libnbd_at_least 1.16; then
        failing=("bs-unknown-cookie:invalid or unexpected reply magic|the server sent nothing for 5 seconds")
        msg "bs-empty ($engine): the copy is correct (libnbd >= 1.16)"
        start_hostile src "$T/src.img" --readonly --fault bs-empty
        out=$T/out-bs-empty-$engine.img
        expect_copy_ok "${opts[@]}" "$src" "$out"
        cmp -s "$T/src.img" "$out" ||
            fail "bs-empty ($engine): content differs ($(cmp "$T/src.img" "$out" 2>&1 | head -1))"
        stop_server src
    fi
    for case in "${failing[@]}"; do
        fault=${case%%:*}
        msg "$fault ($engine): a clean failure"
        start_hostile src "$T/src.img" --readonly --fault "$fault"
        out=$T/out-$fault-$engine.img
        expect_copy_fails "${case#*:}" "${opts[@]}" "$src" "$out"
        assert_no_wrong_data "$T/src.img" "$out"
        stop_server src
    done
done

# A window in the middle of a larger image: the 3rd block-status reply is
# the hostile one (several windows: 1 GiB each; here 3 GiB of mostly
# zeroes after the test file), four connections.
msg "bs-two-chunks on a later window, -C 4"
start_hostile src "$T/src.img" --readonly --multi-conn --size $((3 * 1024 * MiB)) \
    --fault bs-two-chunks --nth 2
expect_copy_ok --timeout=5 -C 4 -T 4 "$src" "$T/out.img"
# The first $size bytes are the test file's, the rest of the 3 GiB zeroes.
# (cmp against /dev/zero read all 3 GiB of both, 9 s of CPU here; python3
# reads only the copy's data, SEEK_DATA / SEEK_HOLE: a hole is zeroes.)
python3 - "$T/src.img" "$T/out.img" $((3 * 1024 * MiB)) <<'PY' || fail "-C 4: wrong copy"
import os, sys
src, out, size = open(sys.argv[1], "rb").read(), os.open(sys.argv[2], os.O_RDONLY), int(sys.argv[3])
got = os.fstat(out).st_size
if got != size:
    sys.exit(f"-C 4: size {got}, expected {size}")
if os.pread(out, len(src), 0) != src:
    sys.exit("-C 4: the data differs")
pos = len(src)
while pos < size:
    try:
        start = os.lseek(out, pos, os.SEEK_DATA)
    except OSError:  # ENXIO: no data at or after pos
        break
    end = os.lseek(out, start, os.SEEK_HOLE)
    for a in range(start, end, 1 << 20):
        if os.pread(out, min(end - a, 1 << 20), a).count(0) != min(end - a, 1 << 20):
            sys.exit(f"-C 4: the tail is not zeroes (at or after byte {a})")
    pos = end
PY
stop_server src
msg PASS
