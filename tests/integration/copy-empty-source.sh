#!/usr/bin/env bash
# Empty (size 0) sources: file, nbdkit memory size=0 and [ nbdkit null 0 ]
# to a file that already holds data: the result is an empty file.  Also an
# empty file to stdout and to null:.
source "$(dirname "$0")/lib/lib.sh"

: >"$T/empty.img"

check_empty_dst() { # WHAT
    [[ -f $T/dst.img ]] || fail "$1: destination missing"
    [[ $(stat -c %s "$T/dst.img") -eq 0 ]] ||
        fail "$1: destination has size $(stat -c %s "$T/dst.img"), expected 0"
}

msg "empty file -> file with 1 MiB of data"
make_random_file "$T/dst.img" "$MiB"
run_copy "$T/empty.img" "$T/dst.img"
check_empty_dst "empty file"

msg "nbdkit memory size=0 -> file with data"
start_nbdkit mem memory size=0
make_random_file "$T/dst.img" "$MiB"
run_copy "$(uri_for mem)" "$T/dst.img"
check_empty_dst "empty nbd export"

msg "[ nbdkit null 0 ] -> new file"
rm -f "$T/dst.img"
run_copy -- [ nbdkit null 0 ] "$T/dst.img"
check_empty_dst "empty [ nbdkit ] export"

msg "empty file -> stdout, -> null:"
run_copy "$T/empty.img" - >"$T/stdout.img"
[[ ! -s $T/stdout.img ]] || fail "output on stdout for an empty source"
run_copy "$T/empty.img" null:
msg PASS
