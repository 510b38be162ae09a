#!/usr/bin/env bash
# Write errors on the destination (nbdkit error filter, EIO) always fail the
# copy with a clean one-line error naming the destination, the write (offset
# and length) and the I/O error: every write
# failing, and 10% of writes failing (3 rounds of 128 data requests).
source "$(dirname "$0")/lib/lib.sh"

size=$((8 * MiB))
make_random_file "$T/src.img" "$size"   # all data: every request is a write

msg "every write fails"
start_nbdkit dst --filter=error memory size="$size" error-pwrite-rate=1 error=EIO
expect_fail "$NBDCOPY" "$T/src.img" "$(uri_for dst)"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for dst)"): write at offset [0-9]+ length [0-9]+: Input/output error\$"
stop_server dst

for round in 1 2 3; do
    msg "10% of writes fail (round $round, 64 KiB requests)"
    start_nbdkit dst --filter=error memory size="$size" error-pwrite-rate=0.1 error=EIO
    expect_fail "$NBDCOPY" --request-size=65536 "$T/src.img" "$(uri_for dst)"
    assert_err_matches "^nbdcopy: $(re_quote "$(uri_for dst)"): write at offset [0-9]+ length [0-9]+: Input/output error\$"
    stop_server dst
done
msg PASS
