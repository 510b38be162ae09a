#!/usr/bin/env bash
# --rate=BYTES caps the bytes read from the source per second, and the copy
# goes at about that rate, neither faster nor much slower: a copy of a
# known amount takes at least about amount / rate from the start of the
# process to its end (a cap that lets reads through faster fails; a busy
# machine only makes it longer), and, measured where the reads arrive
# (nbdkit's log filter timestamps each one), the reads are spread over
# more than half of that (a binary that idles and then copies uncapped
# fails) and at most 4 x that (a cap far below what was asked fails), in
# both engines; from a stream, where no server sees the reads, the whole
# copy is timed. The copies are identical.
# (The span of the reads alone is no lower bound: the limiter's schedule
# starts with the copy, and a first read that a busy machine delays lets
# the next ones catch up with it: 1636 ms where 1650 were expected, once.)
# -v shows the cap; bad values are refused with their reason.
source "$(dirname "$0")/lib/lib.sh"

size=$((8 * MiB))
rate=$((4 * MiB))
make_random_file "$T/src.img" "$size"  # all data: every byte is read

# The first request may start at once and each may start 50 ms early:
# 8 MiB at 4 MiB/s in 1 MiB requests takes at least 7 x 0.25 s - 0.05 s.
min_ms=1650

# read_span_ms LOG: milliseconds from the first read's arrival to the
# last's, by nbdkit's log filter.
read_span_ms() {
    grep -E 'connection=[0-9]+ Read id=[0-9]+ offset=' "$1" | awk '
        { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]
          if (NR == 1) first = s; last = s }
        END { printf "%d\n", (last - first) * 1000 }'
}

# The slowest a cap of 4 MiB/s may be: 4 x the 2 s it takes (the machine is
# shared and noisy; a cap that halved the rate still fails).
max_ms=8000
# The reads of a binary that waits out the time and then copies at full
# speed arrive within a few milliseconds.
min_span_ms=$((min_ms / 2))

rate_copy() { # WHAT ARGS...: a copy from the logged source, its reads' span checked
    local what=$1 span
    shift
    stop_server src
    start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/src-$what.log"
    timed_copy "$what" "$@"
    span=$(read_span_ms "$T/src-$what.log")
    msg "$what: the reads arrived over $span ms"
    ((span >= min_span_ms)) || fail "$what: the reads arrived over $span ms: in a burst, not spread by --rate=$rate (at least $min_span_ms ms)"
    ((span <= max_ms)) || fail "$what: the reads arrived over $span ms: slower than 4 x what --rate=$rate allows ($max_ms ms)"
}

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

rate_copy parallel -v --rate=4M --request-size=1M "$(uri_for src)" "$T/out1.img"
assert_same_file "$T/src.img" "$T/out1.img" "--rate, parallel engine"
grep -q " rate=$rate\$" "$T/cmd.err" || fail "-v does not show rate=$rate: $(grep rate= "$T/cmd.err")"

rate_copy synchronous --synchronous --rate=4M --request-size=1M "$(uri_for src)" "$T/out2.img"
assert_same_file "$T/src.img" "$T/out2.img" "--rate, --synchronous"

timed_copy "a stream" --rate=4M --request-size=1M -- - "$T/out3.img" <"$T/src.img"
assert_same_file "$T/src.img" "$T/out3.img" "--rate, from a stream"

expect_fail "$NBDCOPY" --rate=0 "$T/src.img" "$T/out4.img"
[[ $ERR == "nbdcopy: --rate: must be at least 1 byte a second" ]] || fail "--rate=0: $ERR"
expect_fail "$NBDCOPY" --rate=fast "$T/src.img" "$T/out4.img"
[[ $ERR == "nbdcopy: --rate: not a size: 'fast'" ]] || fail "--rate=fast: $ERR"
[[ ! -e $T/out4.img ]] || fail "a refused --rate created the destination"
msg PASS
