#!/usr/bin/env bash
# A "[ CMD ]" server that cannot be started, or exits before its NBD
# handshake: the error keeps libnbd's words (as libnbd's nbdcopy prints
# them: "recv: Connection reset by peer", or "connect: Connection
# refused" or "connect: Connection reset by peer" when the socket went
# first), then names the command and why:
# "(CMD exited with status N before its NBD handshake ended)", "(CMD was
# killed by signal S (SIGNAME) before ...)", "(the command CMD was not
# found)".  It is the last line, after the command's own stderr, exit
# status 1, and nothing is written to the destination.
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-nbd timeout

# command_case LABEL OWN-STDERR-ERE WHY-ERE CMD...: nbdcopy -- [ CMD ] out.img
command_case() {
    local label=$1 own=$2 why=$3 last
    shift 3
    rm -f "$T/out.img"
    RC=0
    timeout -k 5 20 "$NBDCOPY" -- "[" "$@" "]" "$T/out.img" 2>"$T/$label.err" || RC=$?
    [[ $RC -eq 1 ]] || fail "$label: exit status $RC, expected 1: $(cat "$T/$label.err")"
    last=$(tail -n 1 "$T/$label.err")
    grep -qE -- "^nbdcopy: $(re_quote "[ $* ]"): nbd_[a-z_]+: (recv: Connection reset by peer|connect: Connection (refused|reset by peer)|recv: server disconnected unexpectedly) \($why\)\$" <<<"$last" ||
        fail "$label: the last line does not name the command and /$why/: $last"
    if [[ -n $own ]]; then
        grep -qE -- "$own" <(head -n -1 "$T/$label.err") ||
            fail "$label: the command's own stderr /$own/ is not before nbdcopy's line: $(cat "$T/$label.err")"
    fi
    [[ ! -s $T/out.img ]] || fail "$label: something was written to the destination"
}

command_case qemu-missing "Could not open .*missing.qcow2" \
    "qemu-nbd exited with status 1 before its NBD handshake ended" \
    qemu-nbd -f qcow2 "$T/missing.qcow2"
command_case exit-3 "^oops\$" "sh exited with status 3 before its NBD handshake ended" \
    sh -c 'echo oops >&2; exit 3'
command_case killed "" "sh was killed by signal 9 \(SIGKILL\) before its NBD handshake ended" \
    sh -c 'kill -9 $$'
command_case not-found "" "the command no-such-server-for-nbdcopy was not found" \
    no-such-server-for-nbdcopy --port 1

# The command gone while libnbd's connect() to it is still in progress:
# poll(2) then reports POLLOUT|POLLERR|POLLHUP, which must wake libnbd's
# write side (nbd_poll_events.h); woken on the read side, nbdcopy spun at
# full CPU for ever (3 runs in 400, 32 at a time, on two cores). Many
# runs side by side make that moment likely; each must end, with status 1.
# (The shell is the watchdog: a run still there 15 s after its round began
# is killed, and counts as stuck; no timeout(1) process for each of the 48.)
stuck=0
for round in 1 2 3 4; do
    pids=()
    for ((i = 1; i <= 12; i++)); do
        "$NBDCOPY" -- [ sh -c 'exit 3' ] "$T/race$i.img" 2>"$T/race$i.err" &
        pids+=($!)
    done
    for ((tick = 0; tick < 1500; tick++)); do
        alive=0
        for pid in "${pids[@]}"; do
            ! _alive "$pid" || { alive=1; break; }
        done
        ((alive)) || break
        nap 0.01
    done
    for pid in "${pids[@]}"; do
        ! _alive "$pid" || kill -9 "$pid" 2>/dev/null || true
    done
    for i in "${!pids[@]}"; do
        rc=0
        wait "${pids[i]}" || rc=$?
        if ((rc != 1)); then
            stuck=$((stuck + 1))
            msg "round $round, run $((i + 1)): exit status $rc: $(tail -n 1 "$T/race$((i + 1)).err")"
        fi
    done
done
((stuck == 0)) || fail "$stuck of 48 runs of a command that exits at once did not fail with status 1"
msg PASS
