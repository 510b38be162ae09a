#!/usr/bin/env bash
# Read errors on the source (nbdkit error filter, EIO) always fail the copy
# (CVE-2022-0485 was nbdcopy ignoring them): every read failing, and 10% of
# reads failing on an all-data source (3 rounds of 128 requests each; the
# odds of a round hitting no error are 0.9^128, about 1e-6).  The message
# names the source, the read (offset and length) and the I/O error.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((8 * MiB))

msg "every read fails"
start_nbdkit src --filter=error -r pattern size="$size" error-pread-rate=1 error=EIO
expect_fail "$NBDCOPY" "$(uri_for src)" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for src)"): read at offset [0-9]+ length [0-9]+: Input/output error\$"
stop_server src

for round in 1 2 3; do
    msg "10% of reads fail (round $round, 64 KiB requests)"
    start_nbdkit src --filter=error -r pattern size="$size" error-pread-rate=0.1 error=EIO
    expect_fail "$NBDCOPY" --request-size=65536 "$(uri_for src)" "$T/out.img"
    assert_err_contains "Input/output error"
    assert_err_contains offset
    stop_server src
done
msg PASS
