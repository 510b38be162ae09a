#!/usr/bin/env bash
# Servers that stop talking: a reply that never comes must not hang the
# copy. With --timeout=1 every case below fails within the watchdog (60 s)
# with one line "... the server sent nothing for 1 second (see --timeout)"
# naming the operation that waited: no greeting, no answer to NBD_OPT_GO,
# one read never answered (later ones are), a read chunk without its DONE
# flag, a server that stops answering altogether (source and destination),
# a write, a zero and a flush never answered; parallel and synchronous
# engines. --timeout=0 waits forever: that copy is still running when a
# 4-second watchdog stops it. A server that never hangs up after the
# disconnect delays a finished copy by at most 5 seconds, and so does one
# that stays silent after SIGTERM (exit 143, even with --timeout=0).
# Its parts run side by side (run_parts): each engine's silent sources
# and destinations, the disconnects, the signals with each --timeout, and
# the repeated signal. The source image is made once, for every part.
# A source server serves all of a part's cases but the handshake stall,
# each case under an export name of its own (FAULT/NTH/WHAT: the fault
# for that name only, on a count of its own); a destination server serves
# one case (its file is the case's result).
# labels: signals
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3 timeout
size=$((4 * MiB))
if [[ -z ${HOSTILE_SILENCE_SRC:-} ]]; then
    make_test_file "$T/src.img" "$size"
    export HOSTILE_SILENCE_SRC=$T/src.img # (the parts run inside run_parts)
fi
SRC_IMG=$HOSTILE_SILENCE_SRC
run_parts parallel-src parallel-dst synchronous-src synchronous-dst disconnect sigterm-300 sigterm-0 sigterm-twice

silent="the server sent nothing for 1 second \(see --timeout\)"
# case_uri FAULT NTH WHAT: the export of that case on the source server.
case_uri() { CASE_URI="nbd+unix:///$1/$2/$3?socket=$T/src.sock"; }

# What the failed copies left is checked at the end of the part, in one
# python3 run (a start per case cost more than the copies): each case's
# destination is kept as kept-N.img, and KEPT lists what it was and its path.
KEPT=()
keep_for_check() { # WHAT FILE: the destination of the case just run, if any
    [[ -e $2 ]] || return 0
    mv "$2" "$T/kept-$((${#KEPT[@]} / 2)).img"
    KEPT+=("$1" "$T/kept-$((${#KEPT[@]} / 2)).img")
}
check_kept() {
    ((${#KEPT[@]} > 0)) || return 0
    msg "no wrong data in the $((${#KEPT[@]} / 2)) destinations the failed copies left"
    assert_no_wrong_data_in "$SRC_IMG" "${KEPT[@]}"
}

for engine in parallel synchronous; do
    opts=(--timeout=1)
    [[ $engine == synchronous ]] && opts+=(--synchronous)

    if in_part "$engine-src"; then
        # The handshake stall, before any export name: a server of its own.
        msg "handshake-stall ($engine)"
        start_hostile src "$SRC_IMG" --readonly --fault handshake-stall
        expect_copy_fails "^nbdcopy: [^ ]*src.sock: $silent" "${opts[@]}" \
            "$(uri_for src)" "$T/out.img"
        [[ ! -e $T/out.img ]] || fail "handshake-stall: the destination was created"
        stop_server src
        start_hostile src "$SRC_IMG" --readonly
        msg "go-stall ($engine)"
        case_uri go-stall 0 "$engine"
        expect_copy_fails "^nbdcopy: [^ ]*src.sock: $silent" "${opts[@]}" \
            "$CASE_URI" "$T/out.img"
        [[ ! -e $T/out.img ]] || fail "go-stall: the destination was created"
    fi

    for fault in read-no-reply read-no-done stall; do
        for nth in 0 5; do
            in_part "$engine-src" || continue
            msg "$fault, from command $nth ($engine)"
            case_uri "$fault" "$nth" "$engine"
            expect_copy_fails "(read|extents) at offset [0-9]+ length [0-9]+: $silent" \
                "${opts[@]}" --request-size=256K "$CASE_URI" "$T/out.img"
            keep_for_check "$fault, from command $nth ($engine)" "$T/out.img"
        done
    done

    # The destination goes silent.
    for case in write-no-reply:write:1 zero-no-reply:zero:0 flush-no-reply:flush:0 stall:write:1; do
        in_part "$engine-dst" || continue
        IFS=: read -r fault op nth <<<"$case"
        msg "$fault, destination ($engine)"
        truncate -s "$size" "$T/dst.img"
        start_hostile dst "$T/dst.img" --fault "$fault" --nth "$nth"
        want="$op at offset [0-9]+ length [0-9]+: $silent"
        [[ $op == flush ]] && want="flush: $silent"
        expect_copy_fails "$want" "${opts[@]}" --flush --request-size=256K \
            "$SRC_IMG" "$(uri_for dst)"
        stop_server dst
        keep_for_check "$fault, destination ($engine)" "$T/dst.img"
    done
done
check_kept

# After a good copy the server ignores NBD_CMD_DISC and keeps the
# connection open: the copy still succeeds, within 5 s of the disconnect
# (a short limit of its own; the watchdog is 30 s), also with --timeout=0.
in_part disconnect && start_hostile src "$SRC_IMG" --readonly
for timeout_opt in --timeout=300 --timeout=0; do
    in_part disconnect || continue
    msg "ignore-disconnect, $timeout_opt"
    case_uri ignore-disconnect 0 "${timeout_opt#--}"
    rm -f "$T/out.img"
    WATCHDOG=30 expect_copy_ok "$timeout_opt" "$CASE_URI" "$T/out.img"
    assert_same_file "$SRC_IMG" "$T/out.img" "ignore-disconnect $timeout_opt"
done

if in_part disconnect; then
    msg "--timeout=0 waits forever"
    case_uri read-no-reply 0 forever
    rc=0
    timeout -s KILL 4 "$NBDCOPY" --timeout=0 "$CASE_URI" "$T/out.img" 2>"$T/err.txt" || rc=$?
    [[ $rc -eq 137 ]] ||
        fail "--timeout=0: expected to be still waiting, exit status $rc: $(cat "$T/err.txt")"
    stop_server src
fi

# A signal stops the copy even while a reply never comes: the requests in
# flight get 5 seconds (then they are abandoned), not the silence limit,
# and not forever with --timeout=0. The watchdog's SIGKILL comes later.
for timeout_opt in --timeout=300 --timeout=0; do
    in_part "sigterm-${timeout_opt#--timeout=}" || continue
    start_hostile src "$SRC_IMG" --readonly
    for engine in "" --synchronous; do
        msg "SIGTERM while the server is silent, $timeout_opt $engine"
        what=${engine#--}
        case_uri read-no-reply 0 "${what:-parallel}"
        rc=0
        # shellcheck disable=SC2086
        timeout --preserve-status -k 20 2 "$NBDCOPY" $engine "$timeout_opt" \
            "$CASE_URI" "$T/out.img" 2>"$T/err.txt" || rc=$?
        [[ $rc -eq 143 ]] ||
            fail "SIGTERM $timeout_opt $engine: exit status $rc, expected 143: $(cat "$T/err.txt")"
        grep -q "^nbdcopy: interrupted after copying" "$T/err.txt" ||
            fail "SIGTERM $timeout_opt $engine: no interrupted message: $(cat "$T/err.txt")"
    done
    stop_server src
done
# The same signal twice at once (GNU timeout signals the command and its
# process group) is one request: the copy still ends with its message. A
# signal repeated later ends the process at once, without one.
in_part sigterm-twice && start_hostile src "$SRC_IMG" --readonly
for gap in 0.2 2; do
    in_part sigterm-twice || continue
    msg "SIGTERM twice, $gap s apart, while the server is silent"
    case_uri read-no-reply 0 "gap-$gap"
    "$NBDCOPY" --timeout=0 "$CASE_URI" "$T/out.img" 2>"$T/err.txt" &
    pid=$!
    wait_handles_signal "$pid" 15
    nap 1
    kill -TERM "$pid"
    nap "$gap"
    kill -TERM "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    [[ $rc -eq 143 ]] || fail "SIGTERM twice, $gap s apart: exit status $rc, expected 143"
    if [[ $gap == 0.2 ]]; then
        grep -q "^nbdcopy: interrupted after copying" "$T/err.txt" ||
            fail "SIGTERM twice at once: no interrupted message: $(cat "$T/err.txt")"
    else
        ! grep -q "interrupted" "$T/err.txt" ||
            fail "SIGTERM again after $gap s: the copy waited to finish: $(cat "$T/err.txt")"
    fi
done
msg PASS
