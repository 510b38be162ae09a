#!/usr/bin/env bash
# --allocated: zero ranges are written as allocated zeroes: no Trim requests
# and no Zero request that may trim (nbdkit log shows trim=0), and the
# destination (pre-filled with random bytes) ends up identical to the source.
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
make_random_file "$T/dst.img" "$size"
start_nbdkit dst --filter=log file "$T/dst.img" logfile="$T/requests.txt"

run_copy --allocated "$T/src.img" "$(uri_for dst)"
stop_server dst
assert_same_file "$T/src.img" "$T/dst.img" "--allocated copy"

ntrim=$(log_count "$T/requests.txt" Trim)
[[ $ntrim -eq 0 ]] || fail "$ntrim Trim requests sent with --allocated"
if grep -E 'connection=[0-9]+ Zero id=' "$T/requests.txt" | grep -q 'trim=1'; then
    fail "Zero request allowing trim sent with --allocated"
fi
msg "zero requests: $(log_count "$T/requests.txt" Zero), all with trim=0"
msg PASS
