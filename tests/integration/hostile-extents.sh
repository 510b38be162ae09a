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

for engine in parallel synchronous; do
    opts=(--timeout=5)
    [[ $engine == synchronous ]] && opts+=(--synchronous)
    for fault in bs-past-end bs-past-range bs-zero-length bs-zero-length-only bs-tiny \
                 bs-wrong-context bs-two-chunks bs-error; do
        msg "$fault ($engine): the copy is correct"
        start_hostile src "$T/src.img" --readonly --fault "$fault"
        rm -f "$T/out.img"
        expect_copy_ok "${opts[@]}" "$(uri_for src)" "$T/out.img"
        assert_same_file "$T/src.img" "$T/out.img" "$fault ($engine)"
        stop_server src
    done

    # libnbd kills the connection: the copy fails with its reason.
    for case in "bs-empty:invalid length in NBD_REPLY_TYPE_BLOCK_STATUS" \
                "bs-unknown-cookie:no matching cookie found for server reply"; do
        fault=${case%%:*}
        msg "$fault ($engine): a clean failure"
        start_hostile src "$T/src.img" --readonly --fault "$fault"
        rm -f "$T/out.img"
        expect_copy_fails "${case#*:}" "${opts[@]}" "$(uri_for src)" "$T/out.img"
        assert_no_wrong_data "$T/src.img" "$T/out.img"
        stop_server src
    done
done

# A window in the middle of a larger image: the 3rd block-status reply is
# the hostile one (several windows: 1 GiB each; here 3 GiB of mostly
# zeroes after the test file), four connections.
msg "bs-two-chunks on a later window, -C 4"
start_hostile src "$T/src.img" --readonly --multi-conn --size $((3 * 1024 * MiB)) \
    --fault bs-two-chunks --nth 2
rm -f "$T/out.img"
expect_copy_ok --timeout=5 -C 4 -T 4 "$(uri_for src)" "$T/out.img"
head -c "$size" "$T/out.img" | cmp -s - "$T/src.img" || fail "-C 4: the data differs"
cmp -s -n $((3 * 1024 * MiB - size)) -i "$size:0" "$T/out.img" /dev/zero ||
    fail "-C 4: the tail is not zeroes"
stop_server src
msg PASS
