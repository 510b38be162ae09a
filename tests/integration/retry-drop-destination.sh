#!/usr/bin/env bash
# --retry=N, the destination's connections dropped mid-copy: a write-heavy
# copy from a local file of random bytes to an nbdkit TCP server (the file
# plugin over a file, so what was written survives) behind drop_proxy.py,
# which counts both directions, so it drops connections busy writing:
# closed, reset or silenced (--timeout=2), once or several times, in both
# engines.  The file the server wrote is byte-identical to the source,
# each drop is one reconnection ("URI: connection lost (REASON);
# reconnecting (attempt 1 of N)", "URI: reconnected (attempt 1 of N)", the
# --json count).  Without --retry the drop fails the copy with one line
# naming the destination, the write and the reason.
# Then the server itself is restarted on the same port mid-copy (--rate
# keeps the copy going; the restart waits for 25% progress), in front of
# nbdkit's cache filter in writeback mode: what it acknowledged but had not
# flushed is lost with the restart.  The copy reconnects and ends
# identical; nbdkit's log filter shows every write the first server got
# after its last flush written again to the second one (a destination that
# reconnected gets everything since its last flush written again), in both
# engines, with no flush before the restart (every 5 s) and with flushes
# every 0.3 s (NBDCOPY_CHECKPOINT_SECONDS, with --checkpoint and without).
# A copy that saw no reconnect says so and fails.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
require_cmd nbdkit timeout

size=$((32 * MiB))
make_random_file "$T/src.img" "$size"
truncate -s "$size" "$T/dst.img"
# One thread per connection (-t 1): with several, nbdkit 1.32 aborts now
# and then when a connection ends while a reply is being sent
# (connections.c raw_send_socket: "Assertion `sock >= 0' failed"), and the
# test needs the server alive.
start_nbdkit_tcp dst -t 1 file "$T/dst.img"
dst_port=$TCP_PORT

fresh_destination() { # the same file (the server keeps it open), zeroed
    : >"$T/dst.img"
    truncate -s "$size" "$T/dst.img"
}

# drop_case MODE DROPS RETRY PROXY-OPTIONS -- NBDCOPY-OPTIONS...
drop_case() { # MODE DROPS RETRY PROXY-OPTIONS -- NBDCOPY-OPTIONS (retry_lib.bash)
    fresh_destination
    retry_drop_case dst "$dst_port" "$@"
    # The drops hit connections that were writing: most of their bytes
    # went from nbdcopy to the server.
    local lines=() line
    mapfile -t lines <"$PROXY_LOG"
    for line in "${lines[@]}"; do
        [[ $line == "drop "* ]] || continue
        [[ $line =~ \ c2s=([0-9]+)\ s2c=([0-9]+)\  ]] ||
            fail "$CASE_LABEL: no c2s= and s2c= in the proxy's line: $line"
        ((BASH_REMATCH[1] > BASH_REMATCH[2])) || fail "$CASE_LABEL: a dropped connection was not writing: $line"
    done
    assert_same_file "$T/src.img" "$T/dst.img" "$CASE_LABEL ($*)"
}

drop_case close 1 3 --drop-after 10M -- -p
drop_case close 1 3 --drop-after 10M -- --synchronous -v
drop_case close 3 1 --drop-after 7M --drops 3 -- -C 1 -p --flush
drop_case reset 1 3 --drop-after 10M -- -p
drop_case reset 1 3 --drop-after 10M -- --synchronous -v
drop_case reset 3 2 --drop-after 7M --drops 3 -- -p
drop_case silence 1 3 --drop-after 10M -- --timeout=2 -p
drop_case silence 1 3 --drop-after 10M -- --timeout=2 --synchronous -v

# Without --retry: one line, the write that was lost and why.
for mode in close reset; do
    stop_server px
    start_drop_proxy px "$dst_port" --mode "$mode" --drop-after 10M
    uri="nbd://127.0.0.1:$PROXY_PORT/"
    fresh_destination
    reason=$RETRY_REASON_CLOSE
    [[ $mode == reset ]] && reason=$RETRY_REASON_RESET
    retry_copy "nr-$mode" "$T/src.img" "$uri"
    _re_quote_v u "$uri"
    assert_one_line_failure "nr-$mode" \
        "^nbdcopy: $u: (write|flush)( at offset [0-9]+ length [0-9]+)?: ($reason)\$"
    assert_no_reconnect "nr-$mode"
    proxy_drops_v "$PROXY_LOG"
    [[ $PROXY_DROPS -eq 1 ]] || fail "nr-$mode: the proxy did not drop the connection"
    assert_no_wrong_data "$T/src.img" "$T/dst.img"
done
stop_server px

# The server restarted mid-copy, losing what it had not flushed.
rsize=$((8 * MiB))
make_random_file "$T/rsrc.img" "$rsize"
truncate -s "$rsize" "$T/rdst.img"
start_nbdkit_tcp rdst --filter=log --filter=cache file "$T/rdst.img" cache=writeback \
    logfile="$T/rdst.writes" logappend=true
rdst_uri="nbd://127.0.0.1:$TCP_PORT/"

# flushed_rewritten LOG LINES: "FLUSHES LOST MISSING": the Flush requests
# the first server (the first LINES lines of LOG) completed; the bytes of
# the Write and Zero requests it got after the start of the last of them
# (all of them if none), lost by the restart; and how many of those bytes
# the second server (the lines after) got no Write or Zero for.
flushed_rewritten() {
    "$PROXY_PY" - "$1" "$2" <<'PY'
import re, sys
START = re.compile(r"connection=(\d+) (Write|Zero|Flush) id=(\d+)(?: offset=0x([0-9a-fA-F]+) count=0x([0-9a-fA-F]+))?")
END = re.compile(r"connection=(\d+) \.\.\.Flush id=(\d+) .*return=0")
lines = open(sys.argv[1], errors="replace").read().splitlines()
first, second = lines[: int(sys.argv[2])], lines[int(sys.argv[2]):]
flush_start, last_flush, flushes = {}, -1, 0
for i, line in enumerate(first):
    m = START.search(line)
    if m and m.group(2) == "Flush":
        flush_start[(m.group(1), m.group(3))] = i
    e = END.search(line)
    if e:
        flushes += 1
        last_flush = max(last_flush, flush_start.get((e.group(1), e.group(2)), -1))
def writes(part, after=-1):
    return [(int(m.group(4), 16), int(m.group(5), 16))
            for i, m in ((i, START.search(line)) for i, line in enumerate(part))
            if i > after and m and m.group(2) in ("Write", "Zero")]
lost, again = writes(first, last_flush), writes(second)
def covered(off, n):
    return sum(max(0, min(o + c, off + n) - max(o, off)) for o, c in again)
missing = sum(n - min(n, covered(o, n)) for o, n in lost)
print(flushes, sum(n for _, n in lost), missing)
PY
}

# restart_case LABEL NBDCOPY-OPTIONS...: a copy (--rate=4M: 4 s at least)
# whose destination server is restarted once it is 25% done.  Sets
# FLUSHES and LOST (see flushed_rewritten).
restart_case() {
    local label=$1
    shift
    stop_server rdst
    : >"$T/rdst.writes"
    : >"$T/rdst.img"
    truncate -s "$rsize" "$T/rdst.img"
    restart_nbdkit_tcp rdst
    start_bg_copy "$label" -v --progress=3 --retry=5 --rate=4M --request-size=256K \
        "$@" "$T/rsrc.img" "$rdst_uri"
    wait_progress "$label" 25
    stop_server rdst
    local lines
    _count_lines_v lines "$T/rdst.writes"
    restart_nbdkit_tcp rdst
    finish_bg_copy "$label"
    [[ $RC -eq 0 ]] || fail "$label: the copy failed: $(copy_error "$label")"
    local u k reported all
    _re_quote_v u "$rdst_uri"
    # (One grep: retry_lines; each ERE has "reconnected" or "connection lost".)
    retry_lines "$label"
    retry_lines_count "^nbdcopy: $u: reconnected \(attempt [1-5] of 5\)\$"
    k=$COUNT
    ((k >= 1)) ||
        fail "$label: no reconnection: the restart did not land mid-copy (the test needs it to)"
    retry_json_v reported "$label" 'r["reconnections"]'
    [[ $reported == "$k" ]] ||
        fail "$label: --json reconnections differs from the $k 'reconnected' lines"
    retry_lines_count "connection lost \("
    all=$COUNT
    # A reconnection that lands while the old server is exiting is refused,
    # or accepted into its closing listen queue and reset.
    retry_lines_count "^nbdcopy: $u: connection lost \(($RETRY_REASON_SHUTDOWN|$RETRY_REASON_CLOSE|$RETRY_REASON_RESET|nbd_aio_connect_uri: connect: [^:]+:[0-9]+: could not connect to remote host: (Connection refused|Connection reset by peer))\); reconnecting( in [0-9]+ s)? \(attempt [1-5] of 5\)\$"
    [[ $all -eq $COUNT ]] ||
        fail "$label: a 'connection lost' line with an unexpected reason: $(grep -m3 'connection lost' "$T/$label.err")"
    local missing counts
    counts=$(flushed_rewritten "$T/rdst.writes" "$lines") || fail "$label: cannot read $T/rdst.writes"
    read -r FLUSHES LOST missing <<<"$counts"
    [[ -n $missing ]] || fail "$label: cannot read $T/rdst.writes"
    msg "$label: the first server completed $FLUSHES flushes; $LOST bytes written after the last one, $missing of them not written again"
    [[ $missing -eq 0 ]] ||
        fail "$label: $missing of the $LOST bytes written since the last flush before the restart were not written again"
    assert_same_file "$T/rsrc.img" "$T/rdst.img" "$label: the server restarted mid-copy"
}

# No flush before the restart (the first after 5 s, the restart after
# about 1 s): all that was written before it is lost and written again.
for engine in "" --synchronous; do
    # shellcheck disable=SC2086
    restart_case "restart${engine:+-sync}" $engine
    ((FLUSHES > 0 || LOST > 0)) || fail "restart${engine:+-sync}: the first server got no write to lose"
done
# Checkpoints (flushes) every 0.3 s: only what came after the last one
# before the restart needs writing again.
NBDCOPY_CHECKPOINT_SECONDS=0.3 restart_case restart-checkpoint --checkpoint="$T/rdst.map"
((FLUSHES >= 1)) || fail "restart-checkpoint: no flush before the restart (NBDCOPY_CHECKPOINT_SECONDS=0.3)"
# The same flushes with --retry alone: NBDCOPY_CHECKPOINT_SECONDS sets the
# interval of the flushes --retry makes too.
NBDCOPY_CHECKPOINT_SECONDS=0.3 restart_case restart-flushes
((FLUSHES >= 1)) ||
    fail "restart-flushes: no flush before the restart: NBDCOPY_CHECKPOINT_SECONDS=0.3 did not shorten the interval of the flushes of --retry without --checkpoint"
msg PASS
