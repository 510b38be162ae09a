#!/usr/bin/env bash
# File to file: byte-identical, for a mixed data/zero/hole layout with an odd
# size; an existing larger destination is truncated to the source size.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "copy to a new file"
run_copy "$T/src.img" "$T/dst.img"
assert_same_file "$T/src.img" "$T/dst.img" "new destination file"

msg "copy over an existing, larger file full of random bytes"
make_random_file "$T/dst2.img" $((8 * MiB))
run_copy "$T/src.img" "$T/dst2.img"
assert_same_file "$T/src.img" "$T/dst2.img" "pre-existing larger destination"

msg "copy over an existing, smaller file"
make_random_file "$T/dst3.img" 4096
run_copy "$T/src.img" "$T/dst3.img"
assert_same_file "$T/src.img" "$T/dst3.img" "pre-existing smaller destination"
msg PASS
