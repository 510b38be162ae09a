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
# the repeated signal.
# labels: signals
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3 timeout
run_parts parallel-src parallel-dst synchronous-src synchronous-dst disconnect sigterm-300 sigterm-0 sigterm-twice

size=$((4 * MiB))
make_test_file "$T/src.img" "$size"
silent="the server sent nothing for 1 second \(see --timeout\)"

for engine in parallel synchronous; do
    opts=(--timeout=1)
    [[ $engine == synchronous ]] && opts+=(--synchronous)

    for fault in handshake-stall go-stall; do
        in_part "$engine-src" || continue
        msg "$fault ($engine)"
        start_hostile src "$T/src.img" --readonly --fault "$fault"
        rm -f "$T/out.img"
        expect_copy_fails "^nbdcopy: [^ ]*src.sock: $silent" "${opts[@]}" \
            "$(uri_for src)" "$T/out.img"
        [[ ! -e $T/out.img ]] || fail "$fault: the destination was created"
        stop_server src
    done

    for fault in read-no-reply read-no-done stall; do
        for nth in 0 5; do
            in_part "$engine-src" || continue
            msg "$fault, from command $nth ($engine)"
            start_hostile src "$T/src.img" --readonly --fault "$fault" --nth "$nth"
            rm -f "$T/out.img"
            expect_copy_fails "(read|extents) at offset [0-9]+ length [0-9]+: $silent" \
                "${opts[@]}" --request-size=256K "$(uri_for src)" "$T/out.img"
            assert_no_wrong_data "$T/src.img" "$T/out.img"
            stop_server src
        done
    done

    # The destination goes silent.
    for case in write-no-reply:write:1 zero-no-reply:zero:0 flush-no-reply:flush:0 stall:write:1; do
        in_part "$engine-dst" || continue
        IFS=: read -r fault op nth <<<"$case"
        msg "$fault, destination ($engine)"
        truncate -s 0 "$T/dst.img"
        truncate -s "$size" "$T/dst.img"
        start_hostile dst "$T/dst.img" --fault "$fault" --nth "$nth"
        want="$op at offset [0-9]+ length [0-9]+: $silent"
        [[ $op == flush ]] && want="flush: $silent"
        expect_copy_fails "$want" "${opts[@]}" --flush --request-size=256K \
            "$T/src.img" "$(uri_for dst)"
        stop_server dst
        assert_no_wrong_data "$T/src.img" "$T/dst.img"
    done
done

# After a good copy the server ignores NBD_CMD_DISC and keeps the
# connection open: the copy still succeeds, within 5 s of the disconnect
# (a short limit of its own; the watchdog is 30 s), also with --timeout=0.
for timeout_opt in --timeout=300 --timeout=0; do
    in_part disconnect || continue
    msg "ignore-disconnect, $timeout_opt"
    start_hostile src "$T/src.img" --readonly --fault ignore-disconnect
    rm -f "$T/out.img"
    WATCHDOG=30 expect_copy_ok "$timeout_opt" "$(uri_for src)" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "ignore-disconnect $timeout_opt"
    stop_server src
done

if in_part disconnect; then
    msg "--timeout=0 waits forever"
    start_hostile src "$T/src.img" --readonly --fault read-no-reply
    rc=0
    timeout -s KILL 4 "$NBDCOPY" --timeout=0 "$(uri_for src)" "$T/out.img" 2>"$T/err.txt" || rc=$?
    [[ $rc -eq 137 ]] ||
        fail "--timeout=0: expected to be still waiting, exit status $rc: $(cat "$T/err.txt")"
    stop_server src
fi

# A signal stops the copy even while a reply never comes: the requests in
# flight get 5 seconds (then they are abandoned), not the silence limit,
# and not forever with --timeout=0. The watchdog's SIGKILL comes later.
for timeout_opt in --timeout=300 --timeout=0; do
    in_part "sigterm-${timeout_opt#--timeout=}" || continue
    for engine in "" --synchronous; do
        msg "SIGTERM while the server is silent, $timeout_opt $engine"
        start_hostile src "$T/src.img" --readonly --fault read-no-reply
        rc=0
        # shellcheck disable=SC2086
        timeout --preserve-status -k 20 2 "$NBDCOPY" $engine "$timeout_opt" \
            "$(uri_for src)" "$T/out.img" 2>"$T/err.txt" || rc=$?
        [[ $rc -eq 143 ]] ||
            fail "SIGTERM $timeout_opt $engine: exit status $rc, expected 143: $(cat "$T/err.txt")"
        grep -q "^nbdcopy: interrupted after copying" "$T/err.txt" ||
            fail "SIGTERM $timeout_opt $engine: no interrupted message: $(cat "$T/err.txt")"
        stop_server src
    done
done
# The same signal twice at once (GNU timeout signals the command and its
# process group) is one request: the copy still ends with its message. A
# signal repeated later ends the process at once, without one.
for gap in 0.2 2; do
    in_part sigterm-twice || continue
    msg "SIGTERM twice, $gap s apart, while the server is silent"
    start_hostile src "$T/src.img" --readonly --fault read-no-reply
    "$NBDCOPY" --timeout=0 "$(uri_for src)" "$T/out.img" 2>"$T/err.txt" &
    pid=$!
    sleep 1
    kill -TERM "$pid"
    sleep "$gap"
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
    stop_server src
done
msg PASS
