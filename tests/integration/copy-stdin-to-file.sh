#!/usr/bin/env bash
# stdin (a pipe, size unknown) to a regular file, named or as redirected
# stdout.  A new file holds exactly the bytes that came through the pipe; a
# pre-existing larger file starts with them (its final size is not checked,
# as the source size is unknown up front).
# (nbdcopy 1.14.2 fails here with "truncate: Invalid argument".)
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "pipe -> new file"
run_copy - "$T/out.img" < <(cat "$T/src.img")
assert_same_file "$T/src.img" "$T/out.img" "stdin -> new file"

msg "two files concatenated through a pipe -> existing larger file"
cat "$T/src.img" "$T/src.img" >"$T/twice.img"
make_random_file "$T/out2.img" $((3 * size))
run_copy - "$T/out2.img" < <(cat "$T/src.img" "$T/src.img")
cmp -s -n $((2 * size)) "$T/twice.img" "$T/out2.img" ||
    fail "stdin -> existing file: copied bytes differ"
msg "pipe -> stdout redirected to a regular file"
run_copy - - >"$T/out3.img" < <(cat "$T/src.img")
assert_same_file "$T/src.img" "$T/out3.img" "stdin -> stdout file"
msg PASS
