#!/usr/bin/env bash
# SIGINT, SIGTERM and SIGHUP in the middle of a copy from a "[ CMD ]" server
# (sent to nbdcopy alone, and SIGINT also to its whole process group, as a
# terminal's Ctrl-C does): exit status 128 + signal (130, 143, 129), stderr
# is exactly "nbdcopy: interrupted after copying N of M bytes" with
# 0 < N < M, --progress=FD holds only "N/100" lines and never 100/100, and
# the server started for the copy is gone (reaped, no orphan). A copy
# blocked on a stalled pipe (stdin nobody writes, stdout nobody reads)
# stops on SIGTERM too.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

size=$((64 * MiB))

# interrupt SIGNAL TARGET EXPECTED-STATUS [ENGINE OPTION]
interrupt() {
    local signal=$1 target=$2 expected=$3 i pid rc=0 line
    shift 3
    msg "$signal to $target $*"
    rm -f "$T/out.img" "$T/child.pid" "$T/progress.txt"
    # About 640 KiB/s: slow enough to be interrupted whatever the machine's speed.
    setsid "$NBDCOPY" --progress=3 -R 2 --request-size=64K "$@" -- \
        [ nbdkit --log=null -P "$T/child.pid" --filter=delay pattern "$size" delay-read=200ms ] \
        "$T/out.img" 3>"$T/progress.txt" 2>"$T/err.txt" &
    pid=$!
    # Wait (bounded) until some data has been copied.
    for i in $(seq 600); do
        grep -q '^[1-9][0-9]*/100$' "$T/progress.txt" 2>/dev/null && break
        _alive "$pid" || break
        sleep 0.1
    done
    grep -q '^[1-9][0-9]*/100$' "$T/progress.txt" || fail "the copy never got going"
    [[ -s $T/child.pid ]] || fail "the [ nbdkit ] server wrote no pid file"
    if [[ $target == group ]]; then kill -s "$signal" -- "-$pid"; else kill -s "$signal" "$pid"; fi
    wait "$pid" || rc=$?
    sed 's/^/    stderr: /' "$T/err.txt" >&2
    [[ $rc -eq $expected ]] || fail "$signal: exit status $rc, expected $expected"
    [[ $(wc -l <"$T/err.txt") -eq 1 ]] || fail "$signal: expected one line on stderr"
    line=$(cat "$T/err.txt")
    [[ $line =~ ^nbdcopy:\ interrupted\ after\ copying\ ([0-9]+)\ of\ $size\ bytes$ ]] ||
        fail "$signal: unexpected message '$line'"
    ((BASH_REMATCH[1] > 0 && BASH_REMATCH[1] < size)) || fail "$signal: copied ${BASH_REMATCH[1]}"
    ! grep -vqE '^[0-9]+/100$' "$T/progress.txt" || fail "$signal: stray text on the progress fd"
    ! grep -q '^100/100$' "$T/progress.txt" || fail "$signal: 100/100 for an unfinished copy"
    ! _alive "$(cat "$T/child.pid")" || fail "$signal: the [ nbdkit ] server outlived nbdcopy"
}

# stalled STDIN-OR-STDOUT: SIGTERM while nbdcopy is blocked reading an
# empty pipe or writing a full one: it must not wait for the other end.
stalled() {
    local side=$1 pid i rc=0
    msg "SIGTERM while blocked on a stalled $side"
    rm -f "$T/fifo" "$T/out.img"
    mkfifo "$T/fifo"
    exec 7<>"$T/fifo"  # holds both ends open; nobody reads or writes
    if [[ $side == stdin ]]; then
        "$NBDCOPY" - "$T/out.img" <"$T/fifo" 2>"$T/err.txt" &
    else
        make_random_file "$T/src.img" $((4 * MiB))
        "$NBDCOPY" "$T/src.img" - >"$T/fifo" 2>"$T/err.txt" &
    fi
    pid=$!
    # Let it block: a thread of it asleep in the pipe (wchan pipe_read or
    # pipe_write), 10 s at most (if it has not yet, the signal stops it anyway).
    for i in $(seq 200); do
        grep -qs 'pipe_\(read\|write\)' /proc/"$pid"/task/*/wchan && break
        sleep 0.05
    done
    kill -TERM "$pid"
    for i in $(seq 300); do _alive "$pid" || break; sleep 0.1; done
    if _alive "$pid"; then
        kill -KILL "$pid"
        fail "still blocked on the $side 30 s after SIGTERM"
    fi
    wait "$pid" || rc=$?
    exec 7<&-
    sed 's/^/    stderr: /' "$T/err.txt" >&2
    [[ $rc -eq 143 ]] || fail "stalled $side: exit status $rc, expected 143"
    grep -qxE 'nbdcopy: interrupted after copying [0-9]+( of [0-9]+)? bytes' "$T/err.txt" ||
        fail "stalled $side: unexpected message"
}

stalled stdin
stalled stdout
interrupt INT nbdcopy 130
interrupt TERM nbdcopy 143
interrupt HUP nbdcopy 129
interrupt INT group 130
interrupt TERM nbdcopy 143 --synchronous
msg PASS
