#!/usr/bin/env bash
# --queue-size below --request-size: the queue is raised to one request,
# and -v says so in one stderr line (without -v nothing is said); the copy
# is correct either way. A queue at least one request long is not mentioned.
source "$(dirname "$0")/lib/lib.sh"

make_test_file "$T/src.img" $((3 * MiB))
raised="nbdcopy: queue size 65536 raised to 1048576, the request size"

msg "run: nbdcopy -v --request-size=1M --queue-size=64K src.img out.img"
"$NBDCOPY" -v --request-size=1M --queue-size=64K "$T/src.img" "$T/out.img" 2>"$T/err.txt" ||
    fail "the copy failed: $(head -c 500 "$T/err.txt")"
assert_same_file "$T/src.img" "$T/out.img" "-v with a small queue"
[[ $(grep -cxF -- "$raised" "$T/err.txt") -eq 1 ]] ||
    fail "-v: not one line '$raised': $(grep -i queue "$T/err.txt" | head -5)"
grep -q "queue_size=1048576" "$T/err.txt" || fail "-v: the settings line lacks queue_size=1048576"

rm -f "$T/out.img"
run_copy --request-size=1M --queue-size=64K "$T/src.img" "$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "a small queue without -v"
! grep -q "raised" "$T/cmd.err" || fail "without -v: $(cat "$T/cmd.err")"

"$NBDCOPY" -v --request-size=1M --queue-size=1M "$T/src.img" "$T/out.img" 2>"$T/err.txt" ||
    fail "the copy with a queue of one request failed"
! grep -q "queue size .* raised" "$T/err.txt" || fail "a queue not raised was said to be: $(grep raised "$T/err.txt")"
msg PASS
