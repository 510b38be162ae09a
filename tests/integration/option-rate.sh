#!/usr/bin/env bash
# --rate=BYTES caps the bytes read from the source per second: a copy of a
# known amount takes at least about amount / rate (a lower bound only: a
# busy machine may be slower), in both engines and from a stream, and the
# copy is identical. -v shows the cap; bad values are refused with their
# reason.
source "$(dirname "$0")/lib/lib.sh"

size=$((8 * MiB))
rate=$((4 * MiB))
make_random_file "$T/src.img" "$size"  # all data: every byte is read
start_nbdkit src -r file "$T/src.img"

# The first request may start at once and each may start 50 ms early:
# 8 MiB at 4 MiB/s in 1 MiB requests takes at least 7 x 0.25 s - 0.05 s.
min_ms=1650

timed_copy() { # WHAT ARGS...: runs a copy, fails unless it took >= min_ms
    local what=$1 start end
    shift
    start=$(date +%s%N)
    run_copy "$@"
    end=$(date +%s%N)
    local ms=$(((end - start) / 1000000))
    msg "$what: $ms ms"
    ((ms >= min_ms)) || fail "$what took $ms ms: faster than --rate=$rate allows ($min_ms ms)"
}

timed_copy "parallel engine" -v --rate=4M --request-size=1M "$(uri_for src)" "$T/out1.img"
assert_same_file "$T/src.img" "$T/out1.img" "--rate, parallel engine"
grep -q " rate=$rate\$" "$T/cmd.err" || fail "-v does not show rate=$rate: $(grep rate= "$T/cmd.err")"

timed_copy "--synchronous" --synchronous --rate=4M --request-size=1M "$(uri_for src)" "$T/out2.img"
assert_same_file "$T/src.img" "$T/out2.img" "--rate, --synchronous"

timed_copy "a stream" --rate=4M --request-size=1M -- - "$T/out3.img" <"$T/src.img"
assert_same_file "$T/src.img" "$T/out3.img" "--rate, from a stream"

expect_fail "$NBDCOPY" --rate=0 "$T/src.img" "$T/out4.img"
[[ $ERR == "nbdcopy: --rate: must be at least 1 byte a second" ]] || fail "--rate=0: $ERR"
expect_fail "$NBDCOPY" --rate=fast "$T/src.img" "$T/out4.img"
[[ $ERR == "nbdcopy: --rate: not a size: 'fast'" ]] || fail "--rate=fast: $ERR"
[[ ! -e $T/out4.img ]] || fail "a refused --rate created the destination"
msg PASS
