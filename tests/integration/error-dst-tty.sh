#!/usr/bin/env bash
# Writing disk data to a terminal is refused: "nbdcopy SRC -" with stdout
# a pty (made with script(1)) exits 1 with the one line
# "nbdcopy: -: refusing to write to a terminal" and does not dump the data.
source "$(dirname "$0")/lib/lib.sh"
require_cmd script

make_random_file "$T/src.img" "$MiB"
script -qec "true" /dev/null </dev/null >/dev/null 2>&1 || skip "script(1) cannot allocate a pty"

rc=0
script -qec "'$NBDCOPY' '$T/src.img' -" /dev/null </dev/null >"$T/tty.out" 2>&1 || rc=$?
msg "exit status $rc, terminal output: $(tr -d '\r' <"$T/tty.out" | head -c 300)"
[[ $rc -eq 1 ]] || fail "exit status $rc writing to a terminal, expected 1"
[[ $(tr -d '\r' <"$T/tty.out") == "nbdcopy: -: refusing to write to a terminal" ]] ||
    fail "expected only 'nbdcopy: -: refusing to write to a terminal' on the terminal"
size=$(stat -c %s "$T/tty.out")
((size < 4096)) || fail "$size bytes reached the terminal"
msg PASS
