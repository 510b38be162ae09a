#!/usr/bin/env bash
# How a copy prepares its destination file, seen in its system calls
# (strace): the file is never cut to zero (on ext4 that arms the "replaced
# by truncation" rule, auto_da_alloc, and close then writes the whole copy
# back while the copy waits); an existing one has its old contents punched
# out instead, and the copy is byte-identical either way.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"
require_cmd strace

size=$((12 * MiB + 4096))
make_test_file "$T/src.img" "$size"

# traced LOG ARGS...: runs the copy under strace -f, for ftruncate and fallocate.
# (Under AddressSanitizer without its leak check: LeakSanitizer stops every thread
# with ptrace at exit, and strace holds them already.)
traced() {
    local log=$1
    shift
    msg "run: strace nbdcopy $*"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -qq -e trace=ftruncate,fallocate -o "$log" "$NBDCOPY" "$@" 2>"$T/cmd.err" ||
        fail "nbdcopy $* failed: $(tail -3 "$T/cmd.err")"
}

msg "a new destination file is sized, never cut to zero"
traced "$T/new.trace" "$T/src.img" "$T/new.img"
assert_same_file "$T/src.img" "$T/new.img" "new destination file"
if grep -E 'ftruncate\([0-9]+, 0\)' "$T/new.trace"; then fail "the new file was cut to zero"; fi
grep -qE "ftruncate\([0-9]+, $size\) += 0" "$T/new.trace" ||
    fail "the new file was not sized to $size: $(cat "$T/new.trace")"

msg "an existing, larger file has its old bytes punched out, not cut to zero"
make_random_file "$T/old.img" $((20 * MiB))
traced "$T/old.trace" "$T/src.img" "$T/old.img"
assert_same_file "$T/src.img" "$T/old.img" "existing larger destination file"
if grep -E 'ftruncate\([0-9]+, 0\)' "$T/old.trace"; then fail "the old file was cut to zero"; fi
grep -qE "fallocate\([0-9]+, FALLOC_FL_KEEP_SIZE\|FALLOC_FL_PUNCH_HOLE, 0, $((20 * MiB))\) += 0" \
    "$T/old.trace" || fail "the old contents were not punched out: $(cat "$T/old.trace")"
# Nothing of the old bytes is left allocated where the source has holes.
used=$(($(stat -c '%b * %B' "$T/old.img")))
src_used=$(($(stat -c '%b * %B' "$T/src.img")))
((used <= src_used)) || fail "the old file holds $used bytes, the source $src_used: old blocks stayed"

msg "an existing, smaller file"
make_random_file "$T/small.img" 4096
traced "$T/small.trace" "$T/src.img" "$T/small.img"
assert_same_file "$T/src.img" "$T/small.img" "existing smaller destination file"
msg PASS
