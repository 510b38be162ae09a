#!/usr/bin/env bash
# Hostile read replies (hostile_nbd_server.py as the source), the first
# read and a later one (more in flight), parallel and synchronous engines.
# Every case fails with exit 1 and one line naming the read and the reason,
# within the watchdog, and the destination holds nothing but the source's
# data (or zeroes where nothing was written yet):
#  - replies that do not cover the read exactly once (half a data chunk,
#    half a hole chunk, the first half twice): libnbd 1.14 accepts them, so
#    the buffer's old contents would be copied; we refuse them;
#  - a chunk longer than asked or outside the range, a bad magic number,
#    a reply to a cookie never sent or sent twice, a simple reply 512 bytes
#    short or long (the stream falls out of step): libnbd rejects those and
#    the message is libnbd's reason;
#  - an error chunk with error number 0 (libnbd: EINVAL);
#  - half a reply and then a hang-up.
# (A simple reply 512 bytes short is the one case where the destination
# may hold wrong bytes: the read swallows the next reply's header as data,
# indistinguishable from data until the next reply is parsed.)
# Two servers serve every case, one with structured replies and one
# without; a case's export name (FAULT/NTH/ENGINE) gives it its fault, on
# a count of its own.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3 timeout

size=$((4 * MiB))
make_test_file "$T/src.img" "$size"

not_covered="the server's reply did not cover the range exactly once"
# libnbd 1.14 says "invalid reply magic", 1.22 "invalid or unexpected
# reply magic". A reply to a cookie not in flight kills the connection in
# libnbd 1.14 ("no matching cookie"); from 1.16 on libnbd skips its
# header, and the stream then falls out of step (a bad magic number) or
# the read it stood for never completes (--timeout). An error chunk whose
# error number is 0: EINVAL from libnbd 1.14, EPROTO from 1.22.
bad_magic="invalid (or unexpected )?reply magic"
unknown_cookie="no matching cookie found for server reply"
libnbd_at_least 1.16 && unknown_cookie="$bad_magic|the server sent nothing for 2 seconds"
error_zero="Invalid argument"
libnbd_at_least 1.22 && error_zero="Protocol error"
cases=(
    "read-short:$not_covered"
    "read-hole-short:$not_covered"
    "read-duplicate-chunk:$not_covered"
    "read-long-chunk:range of structured reply is out of bounds"
    "read-chunk-outside:range of structured reply is out of bounds"
    "read-wrong-magic:$bad_magic"
    "read-unknown-cookie:$unknown_cookie"
    "read-duplicate-reply:$unknown_cookie"
    "read-error-zero:read at offset [0-9]+ length [0-9]+: $error_zero"
    "read-disconnect:(Connection reset by peer|server disconnected unexpectedly|Broken pipe|the server closed the connection)"
)
start_hostile src "$T/src.img" --readonly
start_hostile simple "$T/src.img" --readonly --no-structured
# case_uri SERVER FAULT NTH ENGINE: the export of that case.
case_uri() { CASE_URI="nbd+unix:///$2/$3/$4?socket=$T/$1.sock"; }

# What the failed copies left is checked at the end, in one python3 run (a
# start per case cost more than the copies): each case's destination is
# kept as out-N.img, and KEPT lists what it was and its path.
KEPT=()
keep_for_check() { # WHAT: the destination of the case just run, if any
    [[ -e $T/out.img ]] || return 0
    mv "$T/out.img" "$T/out-$((${#KEPT[@]} / 2)).img"
    KEPT+=("$1" "$T/out-$((${#KEPT[@]} / 2)).img")
}

for engine in parallel synchronous; do
    opts=(--timeout=2)
    [[ $engine == synchronous ]] && opts+=(--synchronous)
    for case in "${cases[@]}"; do
        fault=${case%%:*}
        for nth in 0 3; do
            msg "$fault, read $nth ($engine)"
            case_uri src "$fault" "$nth" "$engine"
            expect_copy_fails "${case#*:}" "${opts[@]}" --request-size=256K \
                "$CASE_URI" "$T/out.img"
            [[ $ERR =~ (read|extents)\ at\ offset ]] || fail "the message names no read: $ERR"
            keep_for_check "$fault, read $nth ($engine)"
        done
    done
    for fault in read-simple-short read-simple-long; do
        msg "$fault, without structured replies ($engine)"
        case_uri simple "$fault" 1 "$engine"
        # Short: the read waits for bytes that only the next reply (if any
        # is in flight) supplies, so silence or a broken stream.
        expect_copy_fails "$bad_magic|the server sent nothing for 2 seconds" \
            "${opts[@]}" --request-size=256K \
            "$CASE_URI" "$T/out.img"
        # A reply shorter than announced swallows the start of the next
        # one as data, which no client can tell from data until the
        # stream falls apart (the copy fails then): no content check.
        if [[ $fault == read-simple-short ]]; then
            rm -f "$T/out.img"
        else
            keep_for_check "$fault ($engine)"
        fi
    done
done

msg "no wrong data in the $((${#KEPT[@]} / 2)) destinations the failed copies left"
assert_no_wrong_data_in "$T/src.img" "${KEPT[@]}"

# Without structured replies (every read one simple reply) nothing is
# refused that should not be: the copy is correct.
msg "simple replies only, no fault"
for engine_opt in --synchronous --threads=1; do
    rm -f "$T/out.img"
    expect_copy_ok --timeout=2 "$engine_opt" "$(uri_for simple)" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "simple replies ($engine_opt)"
done
msg PASS
