#!/usr/bin/env bash
# -p on a terminal (a pseudo-terminal): a "\r"-redrawn bar whose last frame
# shows 100 %, the bytes copied of the total, the rate and the time taken,
# ended by a newline. Then Ctrl-C typed on that terminal in the middle of a
# copy from a "[ CMD ]" server: the bar's line is ended, exactly one line
# "nbdcopy: interrupted after copying N of M bytes" follows, the exit status
# is 130, and the server started for the copy is gone (no orphan). The
# same when the terminal goes away (SIGHUP: exit status 129). And a
# failing copy: the bar's line is ended before the one-line error.
# labels: signals
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3
pty_run() { /usr/bin/python3 "$TEST_LIB/pty_run.py" "$@"; }

size=$((64 * MiB))
make_random_file "$T/src.img" "$size"

msg "-p on a terminal, file -> file"
rc=0
pty_run "$T/tty.txt" "$NBDCOPY" -p "$T/src.img" "$T/out.img" || rc=$?
[[ $rc -eq 0 ]] || fail "copy exited $rc: $(tr '\r' '\n' <"$T/tty.txt" | tail -3)"
assert_same_file "$T/src.img" "$T/out.img" "-p on a terminal"
grep -q $'\r' "$T/tty.txt" || fail "no carriage-return redraws on a terminal"
# The terminal turns "\n" into "\r\n"; the last frame follows the last bare "\r".
last=$(sed 's/\r$//' "$T/tty.txt" | tail -n 1 | awk -F'\r' '{print $NF}' | sed 's/ *$//')
msg "last frame: '$last'"
[[ $last =~ ^█\ 100%\ \[\*{40}\]\ 64\.0\ MiB\ of\ 64\.0\ MiB,\ [0-9.]+\ [KMG]?i?B/s,\ in\ [0-9]+:[0-9]{2}$ ]] ||
    fail "unexpected last frame '$last'"
[[ $(tail -c 2 "$T/tty.txt" | od -An -c | tr -d ' ') == '\r\n' ]] ||
    fail "the bar does not end with a newline"
[[ $(grep -c 'nbdcopy:' "$T/tty.txt") -eq 0 ]] || fail "unexpected messages: $(cat "$T/tty.txt")"

msg "-p on 80- and 40-column terminals: frames fit, never wrapped"
pty_run --columns 80 "$T/eighty.txt" "$NBDCOPY" -p "$T/src.img" "$T/out.img" ||
    fail "copy on an 80-column terminal failed"
longest=$(tr '\r' '\n' <"$T/eighty.txt" | wc -L)
((longest <= 79)) || fail "a frame of $longest columns on an 80-column terminal"
grep -q '█ 100% \[\*\{40\}\] 64.0 MiB of 64.0 MiB' "$T/eighty.txt" ||
    fail "no final frame with the amounts on an 80-column terminal"
pty_run --columns 40 "$T/narrow.txt" "$NBDCOPY" -p "$T/src.img" "$T/out.img" ||
    fail "copy on a narrow terminal failed"
longest=$(tr '\r' '\n' <"$T/narrow.txt" | wc -L)
((longest <= 39)) || fail "a frame of $longest columns on a 40-column terminal"
grep -q '█ 100% \[\*\{30\}\]' "$T/narrow.txt" || fail "no final frame on a narrow terminal"

msg "Ctrl-C on a terminal during a copy from [ nbdkit ]"
rm -f "$T/out.img" "$T/child.pid"
rc=0
# About 640 KiB/s: slow enough to be interrupted whatever the machine's speed.
pty_run --ctrl-c-after '[1-9][0-9.]* [KM]iB of' "$T/tty2.txt" \
    "$NBDCOPY" -p -R 2 --request-size=64K -- \
    [ nbdkit --log=null -P "$T/child.pid" --filter=delay pattern "$size" delay-read=200ms ] \
    "$T/out.img" || rc=$?
tr '\r' '\n' <"$T/tty2.txt" | grep -v '^$' | tail -3 | sed 's/^/    /' >&2
[[ $rc -eq 130 ]] || fail "exit status $rc after Ctrl-C, expected 130"
text=$(sed 's/\r$//' "$T/tty2.txt")
[[ $(grep -c 'interrupted' <<<"$text") -eq 1 ]] || fail "expected one 'interrupted' line"
line=$(tail -n 1 <<<"$text")
[[ $line =~ ^nbdcopy:\ interrupted\ after\ copying\ ([0-9]+)\ of\ $size\ bytes$ ]] ||
    fail "last line '$line' is not the interrupt message on a line of its own"
copied=${BASH_REMATCH[1]}
((copied > 0 && copied < size)) || fail "copied $copied of $size"
# The line before it is the bar's last frame, ended with its own newline.
[[ $(tail -n 2 <<<"$text" | head -n 1) == *"iB of 64.0 MiB"* ]] ||
    fail "the bar's line was not ended before the message"
[[ -s $T/child.pid ]] || fail "the [ nbdkit ] server wrote no pid file"
! _alive "$(cat "$T/child.pid")" || fail "the [ nbdkit ] server outlived nbdcopy (orphan)"
msg "the terminal goes away during a copy from [ nbdkit ]: handled as SIGHUP"
rm -f "$T/out.img" "$T/child.pid"
rc=0
pty_run --hang-up-after '[1-9][0-9.]* [KM]iB of' "$T/tty4.txt" \
    "$NBDCOPY" -p -R 2 --request-size=64K -- \
    [ nbdkit --log=null -P "$T/child.pid" --filter=delay pattern "$size" delay-read=200ms ] \
    "$T/out.img" || rc=$?
[[ $rc -eq 129 ]] || fail "exit status $rc after the terminal vanished, expected 129"
[[ -s $T/child.pid ]] || fail "the [ nbdkit ] server wrote no pid file"
! _alive "$(cat "$T/child.pid")" || fail "the [ nbdkit ] server outlived nbdcopy (orphan)"

msg "-p on a terminal, a read error"
rc=0
pty_run "$T/tty3.txt" "$NBDCOPY" -p -- \
    [ nbdkit --log=null --filter=error pattern "$size" error-pread-rate=100% ] "$T/out.img" ||
    rc=$?
[[ $rc -eq 1 ]] || fail "exit status $rc for a failed copy, expected 1"
text=$(sed 's/\r$//' "$T/tty3.txt")
[[ $(tail -n 1 <<<"$text") =~ ^nbdcopy:\ .*read.*$ ]] ||
    fail "the error is not on a line of its own: '$(tail -n 1 <<<"$text")'"
[[ $(tail -n 2 <<<"$text" | head -n 1) == *"of 64.0 MiB"* ]] ||
    fail "the bar's line was not ended before the error"
msg PASS
