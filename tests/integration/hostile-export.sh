#!/usr/bin/env bash
# Absurd exports and contradictory flags (hostile_nbd_server.py):
#  - sizes 0, 1 and odd ones copy exactly (reads past the backing file are
#    zeroes, so the reference is the file cut or zero-extended);
#  - 2^63-1 bytes: refused by a file destination (EFBIG) and by a smaller
#    NBD destination, before any data moves; 2^63 and 2^64-1 (libnbd 1.14
#    hands them on as negative numbers): refused with a message;
#  - transmission flags 0 (no HAS_FLAGS: libnbd refuses), READ_ONLY
#    together with WRITE_ZEROES and TRIM (a read-only destination is
#    refused; as a source it copies), FAST_ZERO without WRITE_ZEROES and
#    every bit set (copies);
#  - block-size constraints that contradict each other or are absurd
#    (minimum above maximum, preferred not a power of two, 2^31): copies.
# Destination protocol faults: a reply with an unknown cookie, a hang-up
# instead of a reply, an error chunk with error number 0 fail cleanly; a
# server that acknowledges a write and drops it is caught by --verify.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3 timeout nbdkit

size=$((4 * MiB))
make_test_file "$T/src.img" "$size"

copy_export() { # SIZE [SERVER OPTIONS...]: the copy equals the first SIZE bytes
    local n=$1; shift
    msg "export of $n bytes $*"
    start_hostile src "$T/src.img" --readonly --size "$n" "$@"
    rm -f "$T/out.img"
    expect_copy_ok --timeout=5 "$(uri_for src)" "$T/out.img"
    local want=$T/src.img  # the file itself when the sizes agree
    if ((n != size)); then
        want=$T/want.img
        cp "$T/src.img" "$want"
        truncate -s "$n" "$want"
    fi
    assert_same_file "$want" "$T/out.img" "export of $n bytes"
    stop_server src
}
for n in 0 1 4097 $((size - 1)) $((size + 12345)); do copy_export "$n"; done

msg "2^63-1 bytes"
start_hostile src "$T/src.img" --readonly --size 9223372036854775807
rm -f "$T/out.img"
expect_copy_fails "out.img: truncate: File too large" --timeout=5 "$(uri_for src)" "$T/out.img"
start_nbdkit dst memory size=1M
expect_copy_fails "destination size is smaller than source size \\(.*dst.sock: source 9223372036854775807 bytes, destination 1048576 bytes\\)" \
    --timeout=5 "$(uri_for src)" "$(uri_for dst)"
stop_server dst
stop_server src
for n in 9223372036854775808 18446744073709551615; do
    msg "$n bytes"
    start_hostile src "$T/src.img" --readonly --size "$n"
    rm -f "$T/out.img"
    expect_copy_fails "src.sock: the server's export size is larger than 2\^63-1" \
        --timeout=5 "$(uri_for src)" "$T/out.img"
    [[ ! -e $T/out.img ]] || fail "size $n: the destination was created"
    stop_server src
done

# Transmission flags: HAS_FLAGS 1, READ_ONLY 2, SEND_FLUSH 4, SEND_TRIM 32,
# SEND_WRITE_ZEROES 64, CAN_MULTI_CONN 256, SEND_FAST_ZERO 2048.
msg "flags 0"
start_hostile src "$T/src.img" --readonly --flags 0
expect_copy_fails "invalid eflags == 0 from server" --timeout=5 "$(uri_for src)" "$T/out.img"
stop_server src
for flags in $((1 | 2 | 32 | 64)) $((1 | 2048)) 0xffff; do
    copy_export "$size" --flags "$flags"
    msg "flags $flags, destination"
    cp "$T/src.img" "$T/dst.img"
    start_hostile dst "$T/dst.img" --flags "$flags"
    if ((flags & 2)); then
        expect_copy_fails "dst.sock: the destination is read-only" --timeout=5 \
            "$T/src.img" "$(uri_for dst)"
    else
        expect_copy_ok --timeout=5 --flush "$T/src.img" "$(uri_for dst)"
        assert_same_file "$T/src.img" "$T/dst.img" "flags $flags, destination"
    fi
    stop_server dst
done
for sizes in 4096,3000,1024 1,1,1 512,2147483648,4294967295 3,4096,33554432; do
    copy_export "$size" --block-size "$sizes"
done

msg "destination protocol faults"
# A reply to a cookie not in flight: libnbd 1.14 kills the connection;
# from 1.16 on it skips the reply's header, and the stream falls out of
# step (a bad magic number) or the write never completes (--timeout). An
# error chunk whose error number is 0: EINVAL from libnbd 1.14, EPROTO
# from 1.22.
unknown_cookie="no matching cookie found for server reply"
libnbd_at_least 1.16 &&
    unknown_cookie="invalid or unexpected reply magic|the server sent nothing for 5 seconds"
error_zero="Invalid argument"
libnbd_at_least 1.22 && error_zero="Protocol error"
for case in "write-unknown-cookie:$unknown_cookie" \
            "write-disconnect:(Connection reset by peer|server disconnected unexpectedly|Broken pipe|the server closed the connection)" \
            "write-error-zero:write at offset [0-9]+ length [0-9]+: $error_zero"; do
    fault=${case%%:*}
    for engine_opt in --threads=1 --synchronous; do
        : >"$T/dst.img"
        truncate -s "$size" "$T/dst.img"
        start_hostile dst "$T/dst.img" --fault "$fault" --nth 1
        expect_copy_fails "${case#*:}" --timeout=5 "$engine_opt" --request-size=256K \
            "$T/src.img" "$(uri_for dst)"
        stop_server dst
        assert_no_wrong_data "$T/src.img" "$T/dst.img"
    done
done
msg "a dropped write is caught by --verify"
: >"$T/dst.img"
truncate -s "$size" "$T/dst.img"
start_hostile dst "$T/dst.img" --fault write-drop --nth 2
expect_copy_fails "the destination does not match the source" --timeout=5 --verify \
    --request-size=256K "$T/src.img" "$(uri_for dst)"
stop_server dst
msg PASS
