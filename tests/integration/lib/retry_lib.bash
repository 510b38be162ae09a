# Helpers for the retry-*.sh tests (--retry=N: a dropped NBD connection is
# re-established and what was in flight issued again).  Source after lib.sh
# and proxy_lib.bash:
#     source "$(dirname "$0")/lib/lib.sh"
#     source "$TEST_LIB/proxy_lib.bash"
#     source "$TEST_LIB/retry_lib.bash"
#
#     retry_copy one -p --retry=3 "$uri" "$T/out.img"
#     assert_recovered one "$uri" 3 1 "$RETRY_REASON_CLOSE"
#
# A copy run by retry_copy LABEL leaves its stderr in $T/LABEL.err and its
# --json report in $T/LABEL.json.

# The reasons a lost connection is given, by how the proxy dropped it
# (extended regular expressions).  A FIN from the server: libnbd's "server
# disconnected unexpectedly" in the middle of a reply, or our words for an
# end of stream between replies.  A RST: the recv or send that met it.
# shellcheck disable=SC2034
RETRY_REASON_CLOSE='nbd_aio_notify_read: recv: server disconnected unexpectedly|the server closed the connection'
# shellcheck disable=SC2034
RETRY_REASON_RESET='nbd_aio_[a-z_]+: (recv|send): (Connection reset by peer|Broken pipe)'
# shellcheck disable=SC2034
RETRY_REASON_SILENCE='the server sent nothing for 2 seconds \(see --timeout\)'
# shellcheck disable=SC2034
RETRY_REASON_SHUTDOWN='the server is shutting down'

# retry_copy LABEL ARGS...: nbdcopy --json=$T/LABEL.json ARGS, stderr in
# $T/LABEL.err, under a watchdog of $WATCHDOG seconds (default 60).  Sets
# RC; a hang or a death by a signal (a crash) fails the test at once.
retry_copy() {
    local label=$1 watchdog=${WATCHDOG:-60}
    shift
    msg "run $label: nbdcopy $*"
    RC=0
    timeout -k 5 "$watchdog" "$NBDCOPY" --json="$T/$label.json" "$@" \
        >"$T/$label.out" 2>"$T/$label.err" || RC=$?
    _retry_show "$label"
    [[ $RC -ne 124 && $RC -ne 137 ]] || fail "$label: hung: still running after ${watchdog}s: nbdcopy $*"
    [[ $RC -lt 128 ]] || fail "$label: nbdcopy died of signal $((RC - 128)) (exit status $RC): nbdcopy $*"
    _no_sanitizer_report "$label"
}

# _no_sanitizer_report LABEL: a sanitizer build that reports on stderr
# exits 1 like a failed copy: say what it found instead.
_no_sanitizer_report() {
    local report
    report=$(grep -m1 -E 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$T/$1.err") || return 0
    fail "$1: $report (see $T/$1.err)"
}

# _retry_show LABEL: the lines of $T/LABEL.err worth seeing (not libnbd's
# debug, not progress frames).
_retry_show() {
    grep -E '^nbdcopy: ' "$T/$1.err" | grep -vE '^nbdcopy: (src|dst|connections|workers)[:=]' |
        head -n 12 | sed 's/^/    stderr: /' >&2 || true
}

# copy_error LABEL: what the copy LABEL said last (its error, when it
# failed): the last "nbdcopy: " line that is not -v's settings or
# statistics, else the first line of $T/LABEL.err.  Never fails.
copy_error() {
    local line
    line=$(grep -E '^nbdcopy: ' "$T/$1.err" 2>/dev/null |
        grep -vE '^nbdcopy: (src|dst|connections|workers)[:=]' | tail -n 1) || true
    [[ -n $line ]] || line=$(grep -v '^ *$' "$T/$1.err" 2>/dev/null | head -n 1) || true
    printf '%s\n' "$line"
}

# retry_json LABEL EXPR: EXPR (Python) evaluated with r the --json report.
retry_json() {
    [[ -s $T/$1.json ]] || fail "$1: no --json report ($T/$1.json)"
    "$(_proxy_python)" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$T/$1.json" "$2" || fail "$1: cannot evaluate $2 on $(cat "$T/$1.json")"
}

# retry_count LABEL ERE: how many lines of $T/LABEL.err match ERE.
retry_count() {
    grep -cE -- "$2" "$T/$1.err" || true
}

# assert_recovered LABEL URI N K REASON: the copy LABEL (run with
# --retry=N) succeeded after K connections to URI were lost, each one
# re-established at its first attempt (made at once): K lines "nbdcopy:
# URI: connection lost (REASON); reconnecting (attempt 1 of N)" (REASON
# matching the ERE, and no other loss), K lines "nbdcopy: URI: reconnected
# (attempt 1 of N)", and the report counts K reconnections.  (A drop that
# hit a connection re-established but not yet done with a request would
# be its second attempt: the attempts count since it last carried one.)
assert_recovered() {
    local label=$1 uri=$2 n=$3 k=$4 reason=$5 u lost ok all
    local attempt='reconnecting \(attempt 1' done='reconnected \(attempt 1'
    [[ $RC -eq 0 ]] || fail "$label: the copy failed (exit status $RC): $(copy_error "$label")"
    u=$(re_quote "$uri")
    all=$(retry_count "$label" "connection lost")
    lost=$(retry_count "$label" "^nbdcopy: $u: connection lost \(($reason)\); $attempt of $n\)\$")
    ok=$(retry_count "$label" "^nbdcopy: $u: $done of $n\)\$")
    if [[ $lost -ne $k || $all -ne $k ]]; then
        grep -E "connection lost" "$T/$label.err" | sed 's/^/    /' >&2 || true
        fail "$label: $all 'connection lost' lines, $lost of them /$u: connection lost \(($reason)\); $attempt of $n\)/, expected $k"
    fi
    [[ $ok -eq $k ]] || fail "$label: $ok lines /$u: $done of $n\)/, expected $k"
    [[ $(retry_count "$label" "could not be re-established") -eq 0 ]] ||
        fail "$label: succeeded but says a connection could not be re-established"
    local reported
    reported=$(retry_json "$label" 'r["reconnections"]')
    [[ $reported == "$k" ]] || fail "$label: --json says reconnections=$reported, expected $k"
    [[ $(retry_json "$label" '(r["exit_status"], r["error"])') == "(0, None)" ]] ||
        fail "$label: --json: $(cat "$T/$label.json")"
}

# assert_no_reconnect LABEL: nothing in $T/LABEL.err speaks of a lost or
# re-established connection (a -v or -p run would show those lines), and
# the report (if any) counts no reconnection.
assert_no_reconnect() {
    local label=$1
    if grep -nE "connection lost|reconnect|re-established" "$T/$label.err" >"$T/$label.reconnects"; then
        fail "$label: a reconnection was attempted: $(head -n 2 "$T/$label.reconnects")"
    fi
    if [[ -s $T/$label.json ]]; then
        [[ $(retry_json "$label" 'r["reconnections"]') == 0 ]] ||
            fail "$label: --json counts reconnections: $(cat "$T/$label.json")"
    fi
}

# assert_one_line_failure LABEL ERE: the copy LABEL exited 1 with exactly
# one line on stderr, "nbdcopy: ..." matching ERE.  Sets ERR.
assert_one_line_failure() {
    local label=$1 want=$2
    ERR=$(cat "$T/$label.err")
    [[ $RC -eq 1 ]] || fail "$label: exit status $RC, expected 1: $ERR"
    [[ $(wc -l <"$T/$label.err") -eq 1 ]] || fail "$label: expected one line on stderr, got: $ERR"
    [[ $ERR == nbdcopy:\ * ]] || fail "$label: stderr does not start with 'nbdcopy: ': $ERR"
    grep -qE -- "$want" <<<"$ERR" || fail "$label: the message does not match /$want/: $ERR"
}

# start_bg_copy LABEL ARGS...: like retry_copy, in the background, with
# file descriptor 3 writing to $T/LABEL.progress (pass --progress=3 for
# wait_progress; it shows no notices, -v does); sets BG_PID.
# finish_bg_copy LABEL waits for it and sets RC.
start_bg_copy() {
    local label=$1
    shift
    msg "start $label: nbdcopy $*"
    : >"$T/$label.progress"
    timeout -k 5 "${WATCHDOG:-60}" "$NBDCOPY" --json="$T/$label.json" "$@" \
        >"$T/$label.out" 2>"$T/$label.err" 3>"$T/$label.progress" &
    BG_PID=$!
    PIDS+=("$BG_PID") # stopped at exit if still running
}

finish_bg_copy() {
    local label=$1
    RC=0
    wait "$BG_PID" || RC=$?
    _forget_pid "$BG_PID"
    _retry_show "$label"
    [[ $RC -ne 124 && $RC -ne 137 ]] || fail "$label: hung: still running after ${WATCHDOG:-60}s"
    [[ $RC -lt 128 ]] || fail "$label: nbdcopy died of signal $((RC - 128)) (exit status $RC)"
    _no_sanitizer_report "$label"
}

# wait_progress LABEL PERCENT: wait until the background copy LABEL has
# reported PERCENT or more (--progress=FD lines "N/100"); fails if it ends
# first or takes 30 s.
wait_progress() {
    local label=$1 want=$2 _ last
    local lines=()
    for _ in $(seq 600); do
        mapfile -t lines <"$T/$label.progress" 2>/dev/null || true
        last=
        ((${#lines[@]})) && last=${lines[-1]%%/*}
        [[ -n $last && $last -ge $want ]] && return 0
        _alive "$BG_PID" || fail "$label: the copy ended at ${last:-0}% before reaching $want%: $(copy_error "$label")"
        sleep 0.05
    done
    fail "$label: no $want% progress within 30 s (last: ${last:-none})"
}

# wait_line LABEL ERE: wait (30 s at most) until $T/LABEL.err of the
# background copy has a line matching ERE.
wait_line() {
    local _
    for _ in $(seq 600); do
        grep -qE -- "$2" "$T/$1.err" 2>/dev/null && return 0
        _alive "$BG_PID" || fail "$1: the copy ended before printing /$2/"
        sleep 0.05
    done
    fail "$1: no line /$2/ within 30 s"
}

# retry_drop_case SIDE PORT MODE DROPS RETRY PROXY-OPTIONS... -- NBDCOPY-OPTIONS...
# The case the retry-drop-* tests share: a copy with --retry=RETRY through a
# fresh drop_proxy.py (named px, --mode MODE and PROXY-OPTIONS) in front of
# the server on 127.0.0.1:PORT. SIDE src: that server is the source, copied
# to $T/out.img (removed first); SIDE dst: $T/src.img is copied to it.
# Checks the copy succeeded, the proxy dropped DROPS connections, and each
# was reported lost for MODE's reason and re-established at once, the
# report counting DROPS reconnections (assert_recovered). Sets CASE_LABEL
# (the copy's files in $T are named after it) and CASE_URI; the caller
# checks the bytes.
RETRY_CASES=0
retry_drop_case() {
    local side=$1 port=$2 mode=$3 drops=$4 retry=$5 proxy=() reason
    shift 5
    while [[ $1 != -- ]]; do proxy+=("$1"); shift; done
    shift
    RETRY_CASES=$((RETRY_CASES + 1))
    CASE_LABEL=$side$RETRY_CASES
    stop_server px
    start_drop_proxy px "$port" --mode "$mode" "${proxy[@]}"
    CASE_URI="nbd://127.0.0.1:$PROXY_PORT/"
    msg "case $CASE_LABEL: $mode, $drops drop(s), --retry=$retry $*"
    if [[ $side == src ]]; then
        rm -f "$T/out.img"
        retry_copy "$CASE_LABEL" --retry="$retry" "$@" "$CASE_URI" "$T/out.img"
    else
        retry_copy "$CASE_LABEL" --retry="$retry" "$@" "$T/src.img" "$CASE_URI"
    fi
    [[ $RC -eq 0 ]] || fail "$CASE_LABEL: the copy failed (exit status $RC): $(copy_error "$CASE_LABEL")"
    [[ $(proxy_drops "$PROXY_LOG") -eq $drops ]] ||
        fail "$CASE_LABEL: the proxy dropped $(proxy_drops "$PROXY_LOG") connections, the test wanted $drops"
    case $mode in
    close) reason=$RETRY_REASON_CLOSE ;;
    reset) reason=$RETRY_REASON_RESET ;;
    silence) reason=$RETRY_REASON_SILENCE ;;
    *) fail "retry_drop_case: no mode $mode" ;;
    esac
    assert_recovered "$CASE_LABEL" "$CASE_URI" "$retry" "$drops" "$reason"
}
