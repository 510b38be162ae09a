#!/usr/bin/env bash
# What --retry does not retry.  An error reply from a live server is no
# dropped connection: nbdkit's error filter on TCP failing every read with
# EIO (the parallel engine and --synchronous), 10% of reads, every write
# (EIO, ENOSPC) on the destination: with --retry=3 the copy fails with one
# line naming the server, the request and the error ("Input/output
# error", "No space left on device"); -v shows no "connection lost" or
# "reconnect" line, --json counts no reconnection, and the server saw no
# connection beyond the copy's own (its log filter's Connect lines).  A
# "[ nbdkit ... ]" command server (socket activation) killed mid-copy is
# not reconnected either: one line naming the command, the read and the
# reason, and no reconnection, in both engines.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
require_cmd nbdkit timeout

size=$((8 * MiB))
eio="Input/output error"

# connects LOG: the connections an nbdkit log filter saw opened.
connects() { logtool connects "$1"; }

# fatal_case LABEL SERVER-NAME WANT-ERE NBDCOPY-ARGS...: the copy fails with
# one line matching WANT-ERE, at once (no reconnection), and -v says
# nothing of reconnecting.
fatal_case() {
    local label=$1 server=$2 want=$3
    shift 3
    : >"$T/$server.connects"
    retry_copy "$label" --retry=3 "$@"
    assert_one_line_failure "$label" "$want"
    assert_no_reconnect "$label"
    local seen allowed status
    retry_json_v status "$label" 'r["exit_status"]'
    [[ $status == 1 ]] || fail "$label: --json exit_status is not 1"
    seen=$(connects "$T/$server.connects")
    retry_json_v allowed "$label" 'r["connections"]'
    ((seen >= 1 && seen <= allowed)) ||
        fail "$label: the server saw $seen connections, the copy uses $allowed: it reconnected"

    retry_copy "$label-v" -v --retry=3 "$@"
    [[ $RC -eq 1 ]] || fail "$label-v: exit status $RC, expected 1"
    assert_no_reconnect "$label-v"
    ERR=$(copy_error "$label-v")
    grep -qE -- "$want" <<<"$ERR" || fail "$label-v: the last message does not match /$want/: $ERR"
}

msg "every read fails with EIO"
start_nbdkit_tcp eio --filter=log --filter=error -r pattern size="$size" \
    error-pread=EIO error-pread-rate=1 logfile="$T/eio.connects" logappend=true
uri="nbd://127.0.0.1:$TCP_PORT/"
_re_quote_v u "$uri"
want="^nbdcopy: $u: read at offset [0-9]+ length [0-9]+: $eio\$"
fatal_case eio eio "$want" "$uri" "$T/out.img"
fatal_case eio-sync eio "$want" --synchronous "$uri" "$T/out.img"

msg "10% of the reads fail with EIO (128 reads of 64 KiB)"
start_nbdkit_tcp eio10 --filter=log --filter=error -r pattern size="$size" \
    error-pread=EIO error-pread-rate=0.1 logfile="$T/eio10.connects" logappend=true
uri="nbd://127.0.0.1:$TCP_PORT/"
_re_quote_v u "$uri"
fatal_case eio10 eio10 "^nbdcopy: $u: read at offset [0-9]+ length 65536: $eio\$" \
    --request-size=64K "$uri" "$T/out.img"

make_random_file "$T/src.img" "$size"
for err in EIO:"$eio" ENOSPC:"No space left on device"; do
    msg "every write fails with ${err%%:*}"
    name=w${err%%:*}
    start_nbdkit_tcp "$name" --filter=log --filter=error memory size="$size" \
        error-pwrite="${err%%:*}" error-pwrite-rate=1 logfile="$T/$name.connects" logappend=true
    uri="nbd://127.0.0.1:$TCP_PORT/"
    _re_quote_v u "$uri"
    fatal_case "$name" "$name" \
        "^nbdcopy: $u: write at offset [0-9]+ length [0-9]+: ${err#*:}\$" \
        "$T/src.img" "$uri"
done

# A command server killed (SIGKILL) once the copy is 20% done.
make_test_file "$T/big.img" $((16 * MiB))
# (A server still running at the end, the test having failed before it
# was killed; the pid file goes as soon as that pid is killed.)
# shellcheck disable=SC2016
at_exit '[[ -s $T/cmd.pid ]] && kill -9 "$(<"$T/cmd.pid")" 2>/dev/null'
for engine in "" --synchronous; do
    label=cmd${engine:+-sync}
    msg "$label: [ nbdkit ] killed mid-copy"
    rm -f "$T/cmd.pid" "$T/out.img"
    cmd=(nbdkit -P "$T/cmd.pid" -r file "$T/big.img")
    args=(--retry=3 --rate=4M --request-size=256K)
    [[ -n $engine ]] && args+=("$engine")
    start_bg_copy "$label" -v --progress=3 "${args[@]}" -- "[" "${cmd[@]}" "]" "$T/out.img"
    wait_progress "$label" 20
    [[ -s $T/cmd.pid ]] || fail "$label: the command server wrote no pid file"
    kill -9 "$(<"$T/cmd.pid")"
    rm -f "$T/cmd.pid"
    finish_bg_copy "$label"
    [[ $RC -eq 1 ]] || fail "$label: exit status $RC, expected 1"
    assert_no_reconnect "$label"
    ERR=$(copy_error "$label")
    _re_quote_v u "[ ${cmd[*]} ]"
    want="^nbdcopy: $u: read at offset [0-9]+ length [0-9]+: ($RETRY_REASON_CLOSE|$RETRY_REASON_RESET)\$"
    grep -qE -- "$want" <<<"$ERR" || fail "$label: the last message does not match /$want/: $ERR"
    assert_no_wrong_data "$T/big.img" "$T/out.img"

    msg "$label: the same without -v: one line"
    rm -f "$T/cmd.pid" "$T/out.img"
    start_bg_copy "$label-1" --progress=3 "${args[@]}" -- "[" "${cmd[@]}" "]" "$T/out.img"
    wait_progress "$label-1" 20
    [[ -s $T/cmd.pid ]] || fail "$label-1: the command server wrote no pid file"
    kill -9 "$(<"$T/cmd.pid")"
    rm -f "$T/cmd.pid"
    finish_bg_copy "$label-1"
    assert_one_line_failure "$label-1" "$want"
    [[ $(retry_json "$label-1" '(r["exit_status"], r["reconnections"])') == "(1, 0)" ]] ||
        fail "$label-1: --json: $(cat "$T/$label-1.json")"
done
msg PASS
