#!/usr/bin/env bash
# --flush: the destination server sees an NBD flush after the writes, and
# the copy is correct.
source "$(dirname "$0")/lib/lib.sh"

size=$((3 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit dst --filter=log memory size="$size" logfile="$T/requests.txt"

run_copy --flush "$T/src.img" "$(uri_for dst)"
assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "--flush copy"
stop_server dst

nflush=$(log_count "$T/requests.txt" Flush)
msg "flush requests: $nflush"
((nflush >= 1)) || fail "no Flush request reached the destination"
# The flush must come after the last write.
last_write=$(grep -nE 'connection=[0-9]+ (Write|Zero|Trim) id=' "$T/requests.txt" | tail -1 | cut -d: -f1)
last_flush=$(grep -nE 'connection=[0-9]+ Flush id=' "$T/requests.txt" | tail -1 | cut -d: -f1)
((last_flush > last_write)) || fail "last Flush (line $last_flush) precedes last write (line $last_write)"
msg PASS
