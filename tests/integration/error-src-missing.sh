#!/usr/bin/env bash
# A missing source file fails cleanly ("nbdcopy: FILE: No such file or
# directory") and creates no destination file; an existing destination is
# left unchanged.
source "$(dirname "$0")/lib/lib.sh"

expect_fail "$NBDCOPY" "$T/no-such-file.img" "$T/out.img"
[[ $ERR == "nbdcopy: $T/no-such-file.img: No such file or directory" ]] ||
    fail "expected 'nbdcopy: $T/no-such-file.img: No such file or directory', got '$ERR'"
[[ ! -e $T/out.img ]] || fail "destination file created for a missing source"

make_random_file "$T/dst.img" "$MiB"
cp "$T/dst.img" "$T/dst.orig"
expect_fail "$NBDCOPY" "$T/no-such-file.img" "$T/dst.img"
[[ $ERR == "nbdcopy: $T/no-such-file.img: No such file or directory" ]] ||
    fail "expected 'nbdcopy: $T/no-such-file.img: No such file or directory', got '$ERR'"
assert_unchanged "$T/dst.img" "$T/dst.orig" "existing destination"
msg PASS
