# The cells of the --retry / --checkpoint matrix (retry-matrix-*.sh,
# checkpoint-matrix-*.sh): one real server (servers_lib.bash) x one
# transport x one fault x one engine, on the source or the destination
# side of a copy.  Source after lib.sh, proxy_lib.bash, retry_lib.bash and
# servers_lib.bash:
#     matrix_data $((24 * MiB))
#     proxy_cell qemu-raw tcp close multi src --drop-after 4M
#     kill_cell nbd-server unix 1.5 sync dst
#
# Every cell ends in a copy identical to the source (cmp; a qcow2 read
# back by qemu-img) whose --checksum (in its --json report) is the
# source's sha256sum, whatever was read again or reconnected, and in
# --json reconnections equal to what the fault did: the connections the proxy dropped (each reported as "connection
# lost" and re-established; with --drop-all, at least those busy with
# data: a drop that cuts a reconnection's handshake is one more attempt of
# it), or the connections the killed server had open.  A cell that fails
# says which cell (KIND/TRANSPORT/FAULT/ENGINE/SIDE), which server, and
# what happened; a server that died by itself is reported as such (assert_server_alive), not as nbdcopy's
# failure.
#
# Engines: multi  -T 4: the default's 4 connections whatever the CPUs
#                  (the plain default is min(4, CPUs): 2 on a 2-CPU host)
#          default no option at all
#          C1     -C 1
#          sync   --synchronous
# Sides:   src    the server serves the source ($T/src.img, or its qcow2),
#                 copied to $T/out.img
#          dst    the server serves the destination (a fresh $T/dst.img,
#                 or qcow2), written from $T/wsrc.img (random bytes)

# The globals set here (CELL...) are for the tests.
# shellcheck disable=SC2034

# matrix_data SIZE: the sources every cell copies: $T/src.img (data,
# holes, allocated zeroes: make_test_file), $T/src.qcow2 (the same, qcow2)
# and $T/wsrc.img (SIZE random bytes, for the destination cells).  A test
# in parts (run_parts) makes them once, before run_parts, and exports
# MATRIX_DATA_DIR=$T: each part's matrix_data then links them into its
# own $T (hard links: no cell writes them).
matrix_data() {
    MATRIX_SIZE=$1
    if [[ -n ${MATRIX_DATA_DIR:-} && $MATRIX_DATA_DIR != "$T" ]]; then
        local f files=()
        for f in src.img src.qcow2 wsrc.img; do
            [[ -e $MATRIX_DATA_DIR/$f ]] && files+=("$MATRIX_DATA_DIR/$f")
        done
        ln "${files[@]}" "$T/" || fail "cannot link the matrix data of $MATRIX_DATA_DIR"
        [[ -s $T/src.img && -s $T/wsrc.img ]] || fail "no matrix data in $MATRIX_DATA_DIR"
        return 0
    fi
    make_test_file "$T/src.img" "$MATRIX_SIZE"
    if command -v qemu-img >/dev/null 2>&1; then
        qemu-img convert -f raw -O qcow2 "$T/src.img" "$T/src.qcow2" ||
            fail "qemu-img could not make $T/src.qcow2"
    fi
    make_random_file "$T/wsrc.img" "$MATRIX_SIZE"
}

# engine_opts ENGINE: the nbdcopy options of ENGINE, in ENGINE_OPTS.
engine_opts() {
    case $1 in
    multi) ENGINE_OPTS=(-T 4) ;;
    default) ENGINE_OPTS=() ;;
    C1) ENGINE_OPTS=(-C 1) ;;
    sync) ENGINE_OPTS=(--synchronous) ;;
    *) fail "unknown engine $1" ;;
    esac
}

# cell_fail WHAT: fail the current cell, naming it and its server.
cell_fail() {
    fail "cell $CELL ($CELL_KIND server at $(_server_address srv)): $*"
}

# cell_begin KIND TRANSPORT FAULT ENGINE SIDE: (re)start the server "srv"
# of the cell with its file (a destination fresh: zeroes, or an empty
# qcow2); sets CELL, CELL_KIND, CELL_SIDE, CELL_LABEL and ENGINE_OPTS.
cell_begin() {
    local kind=$1 transport=$2 fault=$3 engine=$4 side=$5 file
    CELL="$kind/$transport/$fault/$engine/$side"
    CELL_KIND=$kind CELL_SIDE=$side
    CELL_N=$((${CELL_N:-0} + 1))
    CELL_LABEL=cell$CELL_N
    engine_opts "$engine"
    msg "cell $CELL_N: $CELL (at ${SECONDS}s)"
    if [[ -s $T/srv.pid ]]; then
        kill_server srv >/dev/null 2>&1
    fi
    if [[ $side == src ]]; then
        file=$T/src.img
        [[ $kind == qemu-qcow2 ]] && file=$T/src.qcow2
        start_server srv "$kind" "$transport" "$file" ro
    else
        rm -f "$T/dst.img" "$T/dst.qcow2"
        if [[ $kind == qemu-qcow2 ]]; then
            file=$T/dst.qcow2
            qemu-img create -q -f qcow2 "$file" "$MATRIX_SIZE" || fail "qemu-img create $file"
        else
            file=$T/dst.img
            truncate -s "$MATRIX_SIZE" "$file"
        fi
        start_server srv "$kind" "$transport" "$file" rw
    fi
    [[ ! -e $T/out.img ]] || rm -f "$T/out.img"
}

# cell_operands URI: nbdcopy's operands for the cell, in OPERANDS: URI
# (the server, or a proxy in front of it) as the source or destination.
cell_operands() {
    if [[ $CELL_SIDE == src ]]; then
        OPERANDS=("$1" "$T/out.img")
    else
        OPERANDS=("$T/wsrc.img" "$1")
    fi
}

# cell_copy_ok: the cell's copy (retry_copy / finish_bg_copy: RC) ended
# well; if not, the server's own death is named first.
cell_copy_ok() {
    if [[ $RC -ne 0 ]]; then
        assert_server_alive srv "cell $CELL"
        local listens=no pid addr
        server_pid_v pid srv
        _server_address_v addr srv
        _server_listens "$pid" "$addr" && listens=yes
        cell_fail "nbdcopy failed (exit status $RC; the server runs, listening: $listens): $(copy_error "$CELL_LABEL")"
    fi
    grep -q "could not be re-established" "$T/$CELL_LABEL.err" &&
        cell_fail "succeeded, but says a connection could not be re-established"
    return 0
}

# cell_identical [LABEL]: the copy equals its source: the file nbdcopy
# wrote, the file the destination server wrote (the server still running:
# --retry flushed at the end), or the qcow2 it wrote (read by qemu-img
# once the server is stopped cleanly); and the --checksum digest in the
# --json report of copy LABEL (default: the cell's) is the source's
# sha256sum.
cell_identical() {
    local label=${1:-$CELL_LABEL} digest sum
    local want=$T/src.img got=$T/out.img
    if [[ $CELL_SIDE == dst ]]; then
        want=$T/wsrc.img got=$T/dst.img
        if [[ $CELL_KIND == qemu-qcow2 ]]; then
            stop_server srv
            got=$T/dst-readback.img
            rm -f "$got"
            qemu-img convert -f qcow2 -O raw "$T/dst.qcow2" "$got" 2>"$T/convert.err" ||
                cell_fail "qemu-img cannot read the qcow2 destination: $(cat "$T/convert.err")"
        fi
    fi
    cmp -s "$want" "$got" ||
        cell_fail "the copy differs from the source: $(cmp "$want" "$got" 2>&1 | head -n 1)"
    retry_json_v digest "$label" 'r["checksum"]["digest"]'
    read -r sum _ < <(sha256sum "$want")
    [[ $digest == "$sum" ]] ||
        cell_fail "--checksum printed $digest, the source's sha256sum is $sum"
}

# cell_counts: LOST ("connection lost" lines: every loss, a failed
# reconnection attempt included), EPISODES (those of an attempt 1: each
# starts a reconnection), OK ("reconnected" lines) and RECONN (--json's
# reconnections) of the cell's copy.  RECONN must be OK, at least
# EPISODES and at most LOST (a connection re-established, then lost again
# before it carried a request, is re-established a second time within
# the same episode: its attempts go on counting).
cell_counts() {
    local label=$CELL_LABEL
    # (One grep: retry_lines; every ERE here has "connection lost" or
    # "reconnected".)
    retry_lines "$label"
    retry_lines_count "^nbdcopy: .*: connection lost \(.*; reconnecting( in [0-9]+ s)? \(attempt [0-9]+ of [0-9]+\)\$"
    LOST=$COUNT
    retry_lines_count "^nbdcopy: .*: connection lost \(.*; reconnecting \(attempt 1 of [0-9]+\)\$"
    EPISODES=$COUNT
    retry_lines_count "^nbdcopy: .*: reconnected \(attempt [0-9]+ of [0-9]+\)\$"
    OK=$COUNT
    retry_json_v RECONN "$label" 'r["reconnections"]'
    msg "cell $CELL: $LOST connection(s) lost, $EPISODES reconnection(s) started, $OK re-established, --json reconnections=$RECONN"
    retry_lines_count "connection lost"
    [[ $COUNT -eq $LOST ]] ||
        cell_fail "a 'connection lost' line of another form: $(grep -m1 'connection lost' "$T/$label.err")"
    [[ $RECONN -eq $OK ]] ||
        cell_fail "--json reconnections=$RECONN, but $OK 'reconnected' lines"
    ((EPISODES <= RECONN && RECONN <= LOST)) ||
        cell_fail "$RECONN reconnections for $EPISODES reconnections started and $LOST losses"
}

# busy_drops LOG: the connections the proxy dropped while they carried
# data (64 KiB or more through them: past their handshake).
busy_drops() {
    busy_drops_v "$1"
    echo "$BUSY_DROPS"
}

# busy_drops_v LOG: busy_drops in BUSY_DROPS (read in bash, no $(...)).
busy_drops_v() {
    local lines=() line
    BUSY_DROPS=0
    mapfile -t lines <"$1"
    for line in "${lines[@]}"; do
        [[ $line == "drop "* && $line =~ \ bytes=([0-9]+) ]] || continue
        ((BASH_REMATCH[1] < 65536)) || BUSY_DROPS=$((BUSY_DROPS + 1))
    done
    return 0
}

# assert_drops_counted LOG: the drops of the proxy whose log is LOG were
# each reported lost, and reconnected: one reconnection per drop when
# each drop hit one connection (busy with data, or in its first
# handshake); with --drop-all (several at once, some perhaps in the
# handshake of a reconnection, which --retry counts as one more attempt
# of it, some perhaps never used again), one loss and one reconnection
# at least per connection busy with data.
assert_drops_counted() {
    local log=$1 drops busy all=0 lines=() line
    proxy_drops_v "$log"
    drops=$PROXY_DROPS
    busy_drops_v "$log"
    busy=$BUSY_DROPS
    ((drops >= 1)) || cell_fail "the proxy dropped no connection (the copy ended first): the cell tested nothing"
    mapfile -t lines <"$log"
    for line in "${lines[@]}"; do
        [[ $line =~ ^drop\ .*\ rule=[a-z-]*\+all ]] && { all=1; break; }
    done
    if ((all)); then
        # A connection dropped before it carried a request, whose worker
        # (late on a loaded machine) then found no work left, is closed at
        # the end unused: nothing was lost on it.  Every one busy with data
        # is lost and re-established.
        ((busy <= LOST && LOST <= drops)) ||
            cell_fail "the proxy dropped $drops connection(s), $busy busy with data; nbdcopy reports $LOST lost"
        ((RECONN >= busy)) ||
            cell_fail "the proxy dropped $busy connections busy with data, --json counts $RECONN reconnections"
    else
        [[ $LOST -eq $drops ]] ||
            cell_fail "the proxy dropped $drops connection(s), nbdcopy reports $LOST lost"
        [[ $RECONN -eq $drops ]] ||
            cell_fail "the proxy dropped $drops connection(s) ($busy busy with data), --json counts $RECONN reconnections"
    fi
}

# proxy_cell KIND TRANSPORT FAULT ENGINE SIDE PROXY-OPTIONS...: the
# connections of a copy through drop_proxy.py in front of the server, in
# FAULT mode (close, reset, silence: --timeout=2; MODE:NAME names the
# cell's fault NAME, e.g. close:handshake-cut) with PROXY-OPTIONS
# (--drop-after, --drop-every, --drop-all, --drops...).  Every drop is a
# lost connection, re-established (assert_drops_counted).
proxy_cell() {
    local kind=$1 transport=$2 fault=${3%%:*} name=${3#*:} engine=$4 side=$5 extra=()
    shift 5
    cell_begin "$kind" "$transport" "$name" "$engine" "$side"
    start_proxy_for px srv --mode "$fault" "$@"
    cell_operands "$PROXY_URI"
    [[ $fault == silence ]] && extra=(--timeout=2)
    retry_copy "$CELL_LABEL" -p --retry=3 --checksum "${extra[@]}" "${ENGINE_OPTS[@]}" \
        "${OPERANDS[@]}"
    cell_copy_ok
    assert_server_alive srv "cell $CELL"
    cell_counts
    assert_drops_counted "$PROXY_LOG"
    if [[ $fault == silence ]]; then
        retry_lines_count "connection lost \($RETRY_REASON_SILENCE\)" # (cell_counts's lines)
        [[ $COUNT -eq $LOST ]] ||
            cell_fail "a silent connection was lost for another reason: $(grep -m1 'connection lost' "$T/$CELL_LABEL.err")"
    fi
    stop_server px
    cell_identical
}

# server_connections NAME: the connections server NAME has open now (ss).
server_connections() {
    server_connections_v "$1"
    echo "$SERVER_CONNECTIONS"
}

# server_connections_v NAME: server_connections in SERVER_CONNECTIONS
# (one ss, counted in bash; no $(...)).
server_connections_v() {
    local addr lines=() line
    _server_address_v addr "$1"
    if [[ $addr == /* ]]; then
        ss -Hx src "$addr" >"$T/ss.out" || true
    else
        ss -Htn state established "( sport = :$addr )" >"$T/ss.out" || true
    fi
    mapfile -t lines <"$T/ss.out"
    SERVER_CONNECTIONS=0
    for line in "${lines[@]}"; do
        if [[ $addr == /* ]]; then
            [[ $line == *ESTAB* ]] || continue
        else
            [[ -n $line ]] || continue
        fi
        SERVER_CONNECTIONS=$((SERVER_CONNECTIONS + 1))
    done
    return 0
}

# engine_connections ENGINE: how many connections ENGINE opens to a
# multi-conn server.
engine_connections() {
    engine_connections_v "$1"
    echo "$ENGINE_CONNECTIONS"
}
engine_connections_v() { # ENGINE: engine_connections in ENGINE_CONNECTIONS
    case $1 in
    multi) ENGINE_CONNECTIONS=4 ;;
    default)
        [[ -n ${_NPROC:-} ]] || _NPROC=$(nproc)
        ENGINE_CONNECTIONS=$((_NPROC < 4 ? _NPROC : 4))
        ;;
    *) ENGINE_CONNECTIONS=1 ;;
    esac
}

# wait_server_connections NAME N LABEL: wait until server NAME has N
# connections open (the background copy LABEL is under way, all its
# connections made); fails if the copy ends first or it takes 30 s.
wait_server_connections() {
    local i n=0
    for ((i = 0; i < 600; i++)); do
        server_connections_v "$1"
        n=$SERVER_CONNECTIONS
        ((n >= $2)) && return 0
        _alive "$BG_PID" || cell_fail "the copy ended before it had $2 connections open: $(copy_error "$3")"
        nap 0.05
    done
    cell_fail "the copy had $n connections open after 30 s, not $2"
}

# _kill_cell_start KIND TRANSPORT DELAY ENGINE SIDE SLOW: kill_cell's
# cell begun, its copy started (SLOW times slower than its 1.5 s), and its
# server frozen once the copy is under way with all its connections open.
_kill_cell_start() {
    local kind=$1 transport=$2 delay=$3 engine=$4 side=$5 slow=$6
    cell_begin "$kind" "$transport" "kill-restart-${delay}s" "$engine" "$side"
    cell_operands "$SERVER_URI"
    # About 1.5 s: the source's data and allocated zeroes are 60 % of it.
    local rate=$((MATRIX_SIZE * 2 / 3 / slow))
    [[ $side == src ]] && rate=$((MATRIX_SIZE * 2 / 5 / slow))
    # (-v shows the losses and reconnections as -p does; --progress=3 tells
    # when the copy is under way: its first connection's handshake is
    # done, and a run's first handshake cut fails the copy at once.)
    # --retry=7: attempts over 63 s (1, 2, 4 ... 32 s apart), where a
    # server restarted on a loaded machine took over the 15 s of 5.
    start_bg_copy "$CELL_LABEL" -v --progress=3 --retry=7 --rate="$rate" --request-size=256K \
        --checksum "${ENGINE_OPTS[@]}" "${OPERANDS[@]}"
    # The server is frozen (SIGSTOP) the moment the copy is 5 % done with
    # all its connections open: the copy cannot end, nor its connections
    # close, while this test counts them and kills the server.  Returns 1
    # when the copy ended first (this test late on a loaded machine).
    local want lines=() i
    engine_connections_v "$engine"
    want=$ENGINE_CONNECTIONS
    for ((i = 0; i < 600; i++)); do
        mapfile -t lines <"$T/$CELL_LABEL.progress"
        if ((${#lines[@]})) && ((${lines[-1]%%/*} >= 5)) &&
            server_connections_v srv && ((SERVER_CONNECTIONS >= want)); then
            freeze_server srv
            return 0
        fi
        _alive "$BG_PID" || return 1
        nap 0.05
    done
    cell_fail "the copy was not 5 % done with $want connections open within 30 s"
}

# kill_cell KIND TRANSPORT DELAY ENGINE SIDE: a copy (--rate: about 1.5
# s) whose server is frozen once the copy is 5 % done and has all its
# connections open, then killed with SIGKILL, and started again DELAY seconds later on the same address (a writeback
# destination loses the writes it had not flushed; a qcow2 one, the
# metadata it had not).  Every connection the server had open is one
# reconnection (after as many attempts as the server took to come back).
kill_cell() {
    local kind=$1 transport=$2 delay=$3 engine=$4 side=$5 slow open at lines=()
    for slow in 1 2 4; do
        if _kill_cell_start "$@" "$slow"; then
            assert_server_alive srv "cell $CELL"
            server_connections_v srv
            open=$SERVER_CONNECTIONS
            mapfile -t lines <"$T/$CELL_LABEL.progress"
            at=${lines[-1]}
            ((${at%%/*} < 50)) && break
            # Met past its middle, where some workers may have no work left
            # (a kill would not cost them their connection).
            msg "cell $CELL: the copy was $at done when the test could kill the server: again, $((slow * 2)) times slower"
            thaw_server srv
        else
            msg "cell $CELL: the copy ended before the test saw it under way: again, $((slow * 2)) times slower"
        fi
        finish_bg_copy "$CELL_LABEL"
        cell_copy_ok
        ((slow < 4)) || cell_fail "the copy was past its middle each time before the kill: the cell tests nothing"
    done
    kill_server srv
    if [[ $kind == nbdkit-writeback ]]; then
        # No flush yet (--retry flushes every 5 s): all that the copy had
        # written was in the cache the kill lost; nothing is in the file.
        local progress
        mapfile -t lines <"$T/$CELL_LABEL.progress"
        progress=${lines[-1]}
        cmp -s -n "$MATRIX_SIZE" "$T/dst.img" /dev/zero ||
            cell_fail "the killed writeback server had written to its file: the cell would not test lost writes"
        msg "cell $CELL: the killed server lost all the copy had written ($progress done; its file is all zeroes)"
    fi
    local killed_at=${EPOCHREALTIME/./}
    nap "$delay"
    restart_server srv
    msg "cell $CELL: the server listens again $(((${EPOCHREALTIME/./} - killed_at) / 1000)) ms after the kill"
    finish_bg_copy "$CELL_LABEL"
    cell_copy_ok
    assert_server_alive srv "cell $CELL"
    msg "cell $CELL: the server had $open connection(s) open when killed"
    ((open >= 1)) || cell_fail "the server had no connection open when killed"
    cell_counts
    [[ $EPISODES -eq $open && $RECONN -eq $open ]] ||
        cell_fail "the killed server had $open connection(s) open; nbdcopy started $EPISODES reconnections, --json counts $RECONN"
    cell_identical
}
