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
# (It reads the lines _retry_show LABEL, run first, kept: those of a
# report are among them.)
_no_sanitizer_report() {
    local lines=() line
    mapfile -t lines <"$T/$1.shown"
    for line in "${lines[@]}"; do
        [[ $line =~ $_SANITIZER_ERE ]] && fail "$1: $line (see $T/$1.err)"
    done
    return 0
}
_SANITIZER_ERE='ERROR: [A-Za-z]+Sanitizer|runtime error:'

# _retry_show LABEL: the lines of $T/LABEL.err worth seeing (not libnbd's
# debug, not progress frames): the first 12 "nbdcopy: " lines that are
# not -v's settings.  One grep keeps them, and any line of a sanitizer's
# report, in $T/LABEL.shown (for _no_sanitizer_report); the rest is bash.
_retry_show() {
    local lines=() line n=0
    grep -E "^nbdcopy: |$_SANITIZER_ERE" "$T/$1.err" >"$T/$1.shown" || true
    mapfile -t lines <"$T/$1.shown"
    for line in "${lines[@]}"; do
        [[ $line == "nbdcopy: "* ]] || continue
        [[ $line =~ ^nbdcopy:\ (src|dst|connections|workers)[:=] ]] && continue
        printf '    stderr: %s\n' "$line" >&2
        ((++n < 12)) || break
    done
    return 0
}

# copy_error LABEL: what the copy LABEL said last (its error, when it
# failed): the last "nbdcopy: " line that is not -v's settings or
# statistics, else the first line of $T/LABEL.err.  Never fails.
copy_error() {
    local lines=() line i
    grep -E '^nbdcopy: ' "$T/$1.err" >"$T/$1.said" 2>/dev/null || true
    mapfile -t lines <"$T/$1.said"
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        [[ ${lines[i]} =~ ^nbdcopy:\ (src|dst|connections|workers)[:=] ]] && continue
        printf '%s\n' "${lines[i]}"
        return 0
    done
    line=$(grep -m1 -v '^ *$' "$T/$1.err" 2>/dev/null) || true
    printf '%s\n' "$line"
}

# retry_json LABEL EXPR: EXPR (Python) evaluated with r the --json report,
# printed as Python prints it.
retry_json() {
    [[ -s $T/$1.json ]] || fail "$1: no --json report ($T/$1.json)"
    "$PROXY_PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$T/$1.json" "$2" || fail "$1: cannot evaluate $2 on $(cat "$T/$1.json")"
}

# retry_count LABEL ERE: how many lines of $T/LABEL.err match ERE.
retry_count() {
    grep -cE -- "$2" "$T/$1.err" || true
}

# retry_json_v VAR LABEL EXPR: VAR=$(retry_json LABEL EXPR).
retry_json_v() {
    local _rj_out
    _rj_out=$(retry_json "$2" "$3") || exit 1
    printf -v "$1" '%s' "$_rj_out"
}

# _re_quote_v VAR TEXT: VAR=$(re_quote TEXT), in bash.
_re_quote_v() {
    local _rq_in=$2 _rq_out='' _rq_c _rq_i _rq_special='[]\.*^$+?(){}|'
    for ((_rq_i = 0; _rq_i < ${#_rq_in}; _rq_i++)); do
        _rq_c=${_rq_in:_rq_i:1}
        [[ $_rq_special == *"$_rq_c"* ]] && _rq_out+=\\
        _rq_out+=$_rq_c
    done
    printf -v "$1" '%s' "$_rq_out"
}

# _count_lines_v VAR FILE: VAR=$(wc -l <FILE) (its newlines), in bash.
_count_lines_v() {
    local _cl_lines=() _cl_n
    mapfile _cl_lines <"$2"
    _cl_n=${#_cl_lines[@]}
    ((_cl_n == 0)) || [[ ${_cl_lines[-1]} == *$'\n' ]] || _cl_n=$((_cl_n - 1))
    printf -v "$1" '%s' "$_cl_n"
}

# retry_lines LABEL: RETRY_LINES, the lines of $T/LABEL.err that speak of
# a connection lost, reconnecting, reconnected or re-established (one
# grep; the callers count them in bash: every ERE they match a line with
# has one of these words).
retry_lines() {
    grep -aE 'connection lost|reconnect|re-established' "$T/$1.err" >"$T/$1.retry-lines" || true
    mapfile -t RETRY_LINES <"$T/$1.retry-lines"
}

# retry_lines_count ERE: how many of RETRY_LINES match ERE (in COUNT).
retry_lines_count() {
    local line
    COUNT=0
    for line in "${RETRY_LINES[@]}"; do
        if [[ $line =~ $1 ]]; then COUNT=$((COUNT + 1)); fi
    done
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
    local label=$1 uri=$2 n=$3 k=$4 reason=$5 u lost ok all failed
    local attempt='reconnecting \(attempt 1' done='reconnected \(attempt 1'
    [[ $RC -eq 0 ]] || fail "$label: the copy failed (exit status $RC): $(copy_error "$label")"
    _re_quote_v u "$uri"
    retry_lines "$label"
    retry_lines_count "connection lost"
    all=$COUNT
    retry_lines_count "^nbdcopy: $u: connection lost \(($reason)\); $attempt of $n\)\$"
    lost=$COUNT
    retry_lines_count "^nbdcopy: $u: $done of $n\)\$"
    ok=$COUNT
    retry_lines_count "could not be re-established"
    failed=$COUNT
    if [[ $lost -ne $k || $all -ne $k ]]; then
        grep -E "connection lost" "$T/$label.err" | sed 's/^/    /' >&2 || true
        fail "$label: $all 'connection lost' lines, $lost of them /$u: connection lost \(($reason)\); $attempt of $n\)/, expected $k"
    fi
    [[ $ok -eq $k ]] || fail "$label: $ok lines /$u: $done of $n\)/, expected $k"
    [[ $failed -eq 0 ]] ||
        fail "$label: succeeded but says a connection could not be re-established"
    local reported
    retry_json_v reported "$label" 'r["reconnections"]'
    [[ $reported == "$k" ]] || fail "$label: --json says reconnections=$reported, expected $k"
    retry_json_v reported "$label" '(r["exit_status"], r["error"])'
    [[ $reported == "(0, None)" ]] || fail "$label: --json: $(cat "$T/$label.json")"
}

# assert_no_reconnect LABEL: nothing in $T/LABEL.err speaks of a lost or
# re-established connection (a -v or -p run would show those lines), and
# the report (if any) counts no reconnection.
assert_no_reconnect() {
    local label=$1 reported
    if grep -nE "connection lost|reconnect|re-established" "$T/$label.err" >"$T/$label.reconnects"; then
        fail "$label: a reconnection was attempted: $(head -n 2 "$T/$label.reconnects")"
    fi
    if [[ -s $T/$label.json ]]; then
        retry_json_v reported "$label" 'r["reconnections"]'
        [[ $reported == 0 ]] || fail "$label: --json counts reconnections: $(cat "$T/$label.json")"
    fi
}

# assert_one_line_failure LABEL ERE: the copy LABEL exited 1 with exactly
# one line on stderr, "nbdcopy: ..." matching ERE.  Sets ERR.  (Read and
# matched in bash: $(<FILE) makes no process; ERR is that one line.)
assert_one_line_failure() {
    local label=$1 want=$2 n
    ERR=$(<"$T/$label.err")
    [[ $RC -eq 1 ]] || fail "$label: exit status $RC, expected 1: $ERR"
    _count_lines_v n "$T/$label.err"
    [[ $n -eq 1 && $ERR != *$'\n'* ]] || fail "$label: expected one line on stderr, got: $ERR"
    [[ $ERR == nbdcopy:\ * ]] || fail "$label: stderr does not start with 'nbdcopy: ': $ERR"
    [[ $ERR =~ $want ]] || fail "$label: the message does not match /$want/: $ERR"
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
    local label=$1 want=$2 i last
    local lines=()
    for ((i = 0; i < 600; i++)); do
        mapfile -t lines <"$T/$label.progress" 2>/dev/null || true
        last=
        ((${#lines[@]})) && last=${lines[-1]%%/*}
        [[ -n $last && $last -ge $want ]] && return 0
        _alive "$BG_PID" || fail "$label: the copy ended at ${last:-0}% before reaching $want%: $(copy_error "$label")"
        nap 0.05
    done
    fail "$label: no $want% progress within 30 s (last: ${last:-none})"
}

# wait_line LABEL ERE: wait (30 s at most) until $T/LABEL.err of the
# background copy has a line matching ERE.
wait_line() {
    local i
    for ((i = 0; i < 600; i++)); do
        grep -qE -- "$2" "$T/$1.err" 2>/dev/null && return 0
        _alive "$BG_PID" || fail "$1: the copy ended before printing /$2/"
        nap 0.05
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
        [[ ! -e $T/out.img ]] || rm -f "$T/out.img"
        retry_copy "$CASE_LABEL" --retry="$retry" "$@" "$CASE_URI" "$T/out.img"
    else
        retry_copy "$CASE_LABEL" --retry="$retry" "$@" "$T/src.img" "$CASE_URI"
    fi
    [[ $RC -eq 0 ]] || fail "$CASE_LABEL: the copy failed (exit status $RC): $(copy_error "$CASE_LABEL")"
    proxy_drops_v "$PROXY_LOG"
    [[ $PROXY_DROPS -eq $drops ]] ||
        fail "$CASE_LABEL: the proxy dropped $PROXY_DROPS connections, the test wanted $drops"
    case $mode in
    close) reason=$RETRY_REASON_CLOSE ;;
    reset) reason=$RETRY_REASON_RESET ;;
    silence) reason=$RETRY_REASON_SILENCE ;;
    *) fail "retry_drop_case: no mode $mode" ;;
    esac
    assert_recovered "$CASE_LABEL" "$CASE_URI" "$retry" "$drops" "$reason"
}
