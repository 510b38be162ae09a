#!/usr/bin/env bash
# --retry=N gives up: the source's server goes away for good mid-copy (a
# proxy that drops the connection, then refuses every connection for a
# minute; nbdkit killed with SIGKILL and not restarted).  The copy fails
# with one line "nbdcopy: URI: read at offset O length L: the connection
# was lost (REASON) and could not be re-established in N attempts
# (--retry=N): WHY" (WHY: the last attempt's "Connection refused", or the
# reset of a connection the closing port had queued; "1 attempt" for
# --retry=1), --json has that error, exit status 1 and no reconnection,
# and the destination holds nothing but the source's bytes or zeroes.  -v
# shows each attempt: the first at once, "reconnecting (attempt 1 of 3)",
# then "reconnecting in 1 s (attempt 2 of 3)" and "in 2 s (attempt 3 of
# 3)", each after the first with the previous attempt's failure as its
# reason, and no "reconnected".  A server that comes back with another
# export (a larger file) is given up at once, with that reason.  A
# --checkpoint=FILE --retry=2 copy that ran out of attempts continues when
# run again once the server is back (both engines): -v says "resuming with
# N bytes done" (N: what FILE marked done), FILE ends all done, and the
# result is identical.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
require_cmd nbdkit timeout

size=$((16 * MiB))
make_test_file "$T/src.img" "$size"
# One thread per connection (-t 1): with several, nbdkit 1.32 aborts now
# and then when a connection ends while a reply is being sent
# (connections.c raw_send_socket: "Assertion `sock >= 0' failed"), and the
# test needs the server alive.
start_nbdkit_tcp src -t 1 -r file "$T/src.img"
src_port=$TCP_PORT
refused='nbd_aio_connect_uri: connect: 127\.0\.0\.1:[0-9]+: could not connect to remote host: Connection refused'
# The attempt at once may reach the proxy's listening socket in the moment
# before it closes: the connection queued there is reset.
gone="$refused|nbd_aio_[a-z_]+: recv: Connection reset by peer"

# exhausted_re URI N REASON WHY: the one line of a copy that gave up.
exhausted_re() {
    local attempts="$2 attempts"
    [[ $2 -eq 1 ]] && attempts="1 attempt"
    local u
    _re_quote_v u "$1"
    echo "^nbdcopy: $u: read at offset [0-9]+ length [0-9]+: the connection was lost \(($3)\) and could not be re-established in $attempts \(--retry=$2\): ($4)\$"
}

# A proxy that drops the connection after 4 MiB, then is not there (its
# port closed) for 60 s, longer than any of the backoffs here.
gone_proxy() {
    stop_server px
    start_drop_proxy px "$src_port" --mode close --drop-after 4M \
        --refuse-after-drop 60 --refuse-mode unlisten
    URI="nbd://127.0.0.1:$PROXY_PORT/"
}

for case in "2:-C 1" "2:--synchronous" "1:-C 1"; do
    retry=${case%%:*} opts=${case#*:}
    label="gone-$retry${opts// /}"
    gone_proxy
    rm -f "$T/out.img"
    # shellcheck disable=SC2086
    retry_copy "$label" --retry="$retry" $opts "$URI" "$T/out.img"
    assert_one_line_failure "$label" "$(exhausted_re "$URI" "$retry" "$RETRY_REASON_CLOSE" "$gone")"
    [[ $(retry_json "$label" '(r["exit_status"], r["reconnections"])') == "(1, 0)" ]] ||
        fail "$label: --json: $(cat "$T/$label.json")"
    [[ $(retry_json "$label" 'r["error"]') == "${ERR#nbdcopy: }" ]] ||
        fail "$label: --json error is not the message: $(retry_json "$label" 'r["error"]')"
    assert_no_wrong_data "$T/src.img" "$T/out.img"
done

msg "-v shows every attempt"
gone_proxy
rm -f "$T/out.img"
retry_copy verbose -v --retry=3 -C 1 "$URI" "$T/out.img"
[[ $RC -eq 1 ]] || fail "verbose: exit status $RC, expected 1"
_re_quote_v u "$URI"
grep -E "^nbdcopy: $u: (connection lost|reconnected|read at)" "$T/verbose.err" >"$T/verbose.lines" || true
sed 's/^/    /' "$T/verbose.lines" >&2
want=(
    "^nbdcopy: $u: connection lost \(($RETRY_REASON_CLOSE)\); reconnecting \(attempt 1 of 3\)\$"
    "^nbdcopy: $u: connection lost \(($gone)\); reconnecting in 1 s \(attempt 2 of 3\)\$"
    "^nbdcopy: $u: connection lost \($refused\); reconnecting in 2 s \(attempt 3 of 3\)\$"
    "$(exhausted_re "$URI" 3 "$RETRY_REASON_CLOSE" "$refused")"
)
mapfile -t lines <"$T/verbose.lines"
[[ ${#lines[@]} -eq ${#want[@]} ]] ||
    fail "verbose: expected ${#want[@]} lines about the connection, got ${#lines[@]}"
for i in "${!want[@]}"; do
    [[ ${lines[i]} =~ ${want[i]} ]] ||
        fail "verbose: line $((i + 1)) does not match /${want[i]}/: ${lines[i]}"
done
[[ $(tail -n 1 "$T/verbose.err") =~ ^nbdcopy:\ $u:\ read\ at ]] ||
    fail "verbose: the last line is not the failure: $(tail -n 1 "$T/verbose.err")"
stop_server px

# kill_src: SIGKILL, and the server is gone (its pid forgotten).
kill_src() {
    kill -9 "$(<"$T/src.pid")"
    stop_server src
}

msg "the server killed for good mid-copy, default connections"
rm -f "$T/out.img"
src_uri="nbd://127.0.0.1:$src_port/"
start_bg_copy killed --progress=3 --retry=2 --rate=4M --request-size=256K "$src_uri" "$T/out.img"
wait_progress killed 20
kill_src
finish_bg_copy killed
assert_one_line_failure killed "$(exhausted_re "$src_uri" 2 \
    "$RETRY_REASON_CLOSE|$RETRY_REASON_RESET|$RETRY_REASON_SHUTDOWN" "$refused")"
assert_no_wrong_data "$T/src.img" "$T/out.img"

msg "the server comes back with another export"
restart_nbdkit_tcp src
cp "$T/src.img" "$T/src-orig.img"
rm -f "$T/out.img"
start_bg_copy changed --progress=3 --retry=3 --rate=4M --request-size=256K "$src_uri" "$T/out.img"
wait_progress changed 20
stop_server src
truncate -s $((size + MiB)) "$T/src.img"
restart_nbdkit_tcp src
finish_bg_copy changed
_re_quote_v u "$src_uri"
assert_one_line_failure changed \
    "^nbdcopy: $u: read at offset [0-9]+ length [0-9]+: the server came back with another export \(size $((size + MiB)), was $size\)\$"
cp "$T/src-orig.img" "$T/src.img" # the same inode: the server serves it again
restart_nbdkit_tcp src

# done_bytes MAPFILE: the bytes a ddrescue mapfile marks done (+); the
# first line that is no comment is the status line.
done_bytes() {
    local pos len st total=0 first=1
    while read -r pos len st; do
        [[ $pos == \#* || -z $pos ]] && continue
        if ((first)); then first=0; continue; fi
        [[ $st == + ]] && total=$((total + len))
    done <"$1"
    echo "$total"
}

export NBDCOPY_CHECKPOINT_SECONDS=0.3
for engine in "" --synchronous; do
    label=resume${engine:+-sync}
    msg "$label: --checkpoint and --retry=2, the server killed, then back"
    rm -f "$T/out.img" "$T/$label.map"
    args=(--checkpoint="$T/$label.map" --retry=2 --rate=4M --request-size=256K)
    [[ -n $engine ]] && args+=("$engine")
    start_bg_copy "$label-1" --progress=3 "${args[@]}" "$src_uri" "$T/out.img"
    wait_progress "$label-1" 30
    kill_src
    finish_bg_copy "$label-1"
    assert_one_line_failure "$label-1" "$(exhausted_re "$src_uri" 2 \
        "$RETRY_REASON_CLOSE|$RETRY_REASON_RESET|$RETRY_REASON_SHUTDOWN" "$refused")"
    [[ -s $T/$label.map ]] || fail "$label: no checkpoint file after the failed run"
    done_before=$(done_bytes "$T/$label.map")
    msg "$label: the checkpoint marks $done_before of $size bytes done"
    ((done_before > 0 && done_before < size)) ||
        fail "$label: the checkpoint of the failed run marks $done_before of $size bytes done"

    restart_nbdkit_tcp src
    retry_copy "$label-2" -v "${args[@]}" "$src_uri" "$T/out.img"
    [[ $RC -eq 0 ]] || fail "$label: the run after the server came back failed: $(copy_error "$label-2")"
    grep -qxF "nbdcopy: checkpoint=$T/$label.map: resuming with $done_before bytes done" "$T/$label-2.err" ||
        fail "$label: -v does not say 'resuming with $done_before bytes done': $(grep -m1 resuming "$T/$label-2.err" || echo nothing)"
    assert_no_reconnect "$label-2"
    [[ $(done_bytes "$T/$label.map") -eq $size ]] ||
        fail "$label: after the second run the checkpoint marks $(done_bytes "$T/$label.map") of $size bytes done"
    assert_same_file "$T/src.img" "$T/out.img" "$label: resumed after running out of attempts"
done
msg PASS
