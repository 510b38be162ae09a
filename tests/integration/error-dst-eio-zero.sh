#!/usr/bin/env bash
# Write-zeroes errors on the destination (nbdkit error filter, EIO) fail the
# copy with a clean one-line error naming the destination, the zero request
# (offset and length) and the I/O error, for a source
# that is all hole and one that mixes data and holes.
source "$(dirname "$0")/lib/lib.sh"

size=$((4 * MiB))
truncate -s "$size" "$T/holes.img"
make_test_file "$T/mixed.img" "$size"

for src in holes mixed; do
    msg "$src source -> destination whose zero requests fail"
    start_nbdkit dst --filter=error memory size="$size" error-zero-rate=1 error=EIO
    expect_fail "$NBDCOPY" "$T/$src.img" "$(uri_for dst)"
    assert_err_matches "^nbdcopy: $(re_quote "$(uri_for dst)"): zero at offset [0-9]+ length [0-9]+: Input/output error\$"
    stop_server dst
done
msg PASS
