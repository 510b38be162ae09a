#!/usr/bin/env bash
# --retry=N, the source's connections dropped mid-copy: an nbdkit TCP
# source (a file with data, holes and allocated zeroes) behind
# drop_proxy.py, which closes (FIN), resets (RST) or silences (--timeout=2)
# a connection once, or several times, in the parallel engine (-C 1 and the
# default connections) and --synchronous.  With --retry the copy is
# byte-identical to the source file and each drop is one reconnection of
# one connection: -p or -v show, per drop, "URI: connection lost (REASON);
# reconnecting (attempt 1 of N)" (the first attempt is made at once) with
# the drop's reason (the recv or send that met the RST, the FIN, the
# silence limit) and "URI: reconnected (attempt 1 of N)", and --json
# counts exactly the proxy's drops.  The attempts are counted since the
# connection last carried a request: three drops far apart need only
# --retry=1.  NBD_ESHUTDOWN replies (nbdkit's error filter, while a file
# exists) are a lost connection too: reconnected, the reads issued again,
# backing off 1 s, 2 s while the replies go on.  Without --retry (or
# --retry=0) the same drop fails the copy with one line naming the source,
# the read and the reason, and no reconnection.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
require_cmd nbdkit timeout

size=$((32 * MiB))
make_test_file "$T/src.img" "$size" # about 19 MiB of it is read
# One thread per connection (-t 1): with several, nbdkit 1.32 aborts now
# and then when a connection ends while a reply is being sent
# (connections.c raw_send_socket: "Assertion `sock >= 0' failed"), and the
# test needs the server alive.
start_nbdkit_tcp src -t 1 -r file "$T/src.img"
src_port=$TCP_PORT

# drop_case MODE DROPS RETRY PROXY-OPTIONS -- NBDCOPY-OPTIONS...: a copy
# through a new proxy that drops DROPS connections in MODE.
drop_case() { # MODE DROPS RETRY PROXY-OPTIONS -- NBDCOPY-OPTIONS (retry_lib.bash)
    retry_drop_case src "$src_port" "$@"
    assert_same_file "$T/src.img" "$T/out.img" "$CASE_LABEL ($*)"
}

# One drop, 4 MiB into a connection's traffic; then three (or two)
# connections, each once its own traffic reaches 4 MiB (5 MiB): far enough
# apart that each is the first attempt of a connection that carried
# requests since its last loss.
drop_case close 1 3 --drop-after 4M -- -p
drop_case close 1 3 --drop-after 4M -- --synchronous -v
drop_case close 3 1 --drop-after 4M --drops 3 -- -C 1 -p
drop_case reset 1 3 --drop-after 4M -- -p
drop_case reset 1 3 --drop-after 4M -- --synchronous -C 1 -p
drop_case reset 3 1 --drop-after 4M --drops 3 -- -p
drop_case reset 3 2 --drop-after 4M --drops 3 -- --synchronous -p
drop_case silence 1 3 --drop-after 4M -- --timeout=2 -C 1 -v
drop_case silence 1 3 --drop-after 4M -- --timeout=2 --synchronous -p
drop_case silence 2 1 --drop-after 5M --drops 2 -- --timeout=2 -p

# NBD_ESHUTDOWN: every read fails with it while $T/shutting-down exists;
# the file goes once the first loss is reported, so a later attempt (the
# first is at once, the second after 1 s) finds a server that answers.
msg "NBD_ESHUTDOWN replies"
start_nbdkit_tcp esd --filter=error -r file "$T/src.img" \
    error-pread=ESHUTDOWN error-pread-rate=1 error-file="$T/shutting-down"
esd_uri="nbd://127.0.0.1:$TCP_PORT/"
for engine in "" --synchronous; do
    : >"$T/shutting-down"
    rm -f "$T/out.img"
    label=esd${engine:+-sync}
    # shellcheck disable=SC2086
    start_bg_copy "$label" $engine -v --retry=4 "$esd_uri" "$T/out.img"
    wait_line "$label" "connection lost \($RETRY_REASON_SHUTDOWN\)"
    rm -f "$T/shutting-down"
    finish_bg_copy "$label"
    [[ $RC -eq 0 ]] || fail "$label: the copy failed: $(copy_error "$label")"
    # (One grep: retry_lines; each ERE has "reconnected" or "connection lost".)
    retry_lines "$label"
    _re_quote_v u "$esd_uri"
    retry_lines_count "^nbdcopy: $u: reconnected \(attempt [1-4] of 4\)\$"
    k=$COUNT
    ((k >= 1)) || fail "$label: no 'reconnected' line"
    retry_json_v reported "$label" 'r["reconnections"]'
    [[ $reported == "$k" ]] ||
        fail "$label: --json reconnections is not the $k reconnections shown"
    retry_lines_count "connection lost \("
    all=$COUNT
    retry_lines_count "connection lost \($RETRY_REASON_SHUTDOWN\); reconnecting( in [12] s)? \(attempt [1-3] of 4\)\$"
    [[ $all -eq $COUNT ]] ||
        fail "$label: a loss with another reason: $(grep 'connection lost' "$T/$label.err" | head -n 3)"
    assert_same_file "$T/src.img" "$T/out.img" "$label: NBD_ESHUTDOWN $engine"
done

# Without --retry: one line, the read that was lost and why, nothing retried.
nr=0
no_retry_case() { # MODE REASON PROXY-OPTIONS -- NBDCOPY-OPTIONS...
    local mode=$1 reason=$2 proxy=()
    shift 2
    while [[ $1 != -- ]]; do proxy+=("$1"); shift; done
    shift
    nr=$((nr + 1))
    stop_server px
    start_drop_proxy px "$src_port" --mode "$mode" "${proxy[@]}"
    local uri="nbd://127.0.0.1:$PROXY_PORT/" u status
    [[ ! -e $T/out.img ]] || rm -f "$T/out.img"
    retry_copy "nr$nr" "$@" "$uri" "$T/out.img"
    proxy_drops_v "$PROXY_LOG"
    [[ $PROXY_DROPS -eq 1 ]] || fail "nr$nr: the proxy did not drop the connection"
    _re_quote_v u "$uri"
    assert_one_line_failure "nr$nr" \
        "^nbdcopy: $u: (read|extents) at offset [0-9]+ length [0-9]+: ($reason)\$"
    assert_no_reconnect "nr$nr"
    retry_json_v status "nr$nr" 'r["exit_status"]'
    [[ $status == 1 ]] || fail "nr$nr: --json exit_status is not 1"
    assert_no_wrong_data "$T/src.img" "$T/out.img"
}
no_retry_case close "$RETRY_REASON_CLOSE" --drop-after 4M --
no_retry_case reset "$RETRY_REASON_RESET" --drop-after 4M -- --retry=0 -C 1
no_retry_case silence "$RETRY_REASON_SILENCE" --drop-after 4M -- --timeout=2 --synchronous

msg "NBD_ESHUTDOWN without --retry"
: >"$T/shutting-down"
retry_copy esd-nr "$esd_uri" "$T/out.img"
_re_quote_v u "$esd_uri"
assert_one_line_failure esd-nr \
    "^nbdcopy: $u: read at offset [0-9]+ length [0-9]+: Cannot send after transport endpoint shutdown\$"
assert_no_reconnect esd-nr
msg PASS
