# Helpers for the tests of connections that die mid-copy (--retry): nbdkit
# on TCP, restarted on the same port, behind drop_proxy.py, a TCP proxy that
# drops connections on purpose (its options: the top of drop_proxy.py).
# Source after lib.sh:
#     source "$(dirname "$0")/lib/lib.sh"
#     source "$TEST_LIB/proxy_lib.bash"
#
#     start_nbdkit_tcp dst file "$T/dst.img"
#     start_drop_proxy px "$TCP_PORT" --drop-after 1M --mode reset
#     ... nbd://127.0.0.1:$PROXY_PORT/ ...
#     [[ $(proxy_drops "$PROXY_LOG") -eq 1 ]] || fail "..."
#
# Each server or proxy NAME has $T/NAME.log (a proxy's: its event lines)
# and $T/NAME.pid, so stop_server NAME stops either; all are stopped at
# exit.  Call these helpers directly, never inside $(...): the processes
# they start exit with their parent, which would be the subshell.

# The globals set here (TCP_PORT, PROXY_PORT, PROXY_LOG) are for the tests.
# shellcheck disable=SC2034
require_cmd python3

# The interpreter for the Python helpers (a python3 on $PATH may be a slow
# wrapper script), in PROXY_PY (set once: no $(...) per start).
if [[ -x /usr/bin/python3 ]]; then PROXY_PY=/usr/bin/python3; else PROXY_PY=$(command -v python3); fi
_proxy_python() { echo "$PROXY_PY"; }

# _free_tcp_port: a port on 127.0.0.1 that was free a moment ago; whoever
# uses it retries if it was taken meanwhile.  It is drawn at random below
# the kernel's ephemeral range (ip_local_port_range), so that no bind to
# port 0 or outgoing connection, of this test or of another one running
# beside it, is handed the port while a server killed there is down.
# (No process: a port that no socket of /proc/net/tcp{,6} has, local or
# remote, is taken to be free. Python binds port 0 only when the range
# leaves no room below it, or 100 draws all met a socket.)
_free_tcp_port() {
    _pick_tcp_port || return 1
    echo "$FREE_TCP_PORT"
}

# _pick_tcp_port: _free_tcp_port's port in FREE_TCP_PORT (no $(...)).
_pick_tcp_port() {
    local low=32768 i hex tcp6='' tcp=''
    read -r low _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || low=32768
    [[ $low =~ ^[0-9]+$ ]] || low=32768
    if ((low > 11000)); then
        IFS= read -r -d '' tcp </proc/net/tcp || true
        IFS= read -r -d '' tcp6 2>/dev/null </proc/net/tcp6 || true
        for ((i = 0; i < 100; i++)); do
            FREE_TCP_PORT=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
            printf -v hex ':%04X ' "$FREE_TCP_PORT"
            [[ $tcp == *"$hex"* || $tcp6 == *"$hex"* ]] || return 0
        done
    fi
    FREE_TCP_PORT=$("$PROXY_PY" -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()')
}

# _nbdkit_tcp_on NAME PORT ARGS...: start nbdkit on 127.0.0.1:PORT, as our
# child (dies with us), and wait until it listens (it writes its pidfile
# then); its output is appended to $T/NAME.log.  Returns 0 once listening,
# 1 if the port was in use; fails the test on any other failure to start.
_nbdkit_tcp_on() {
    local name=$1 port=$2; shift 2
    local pidf=$T/$name.pid log=$T/$name.log pid lines=0 old=()
    : >"$pidf" # (empty until nbdkit writes it: no rm)
    [[ -f $log ]] && { mapfile -t old <"$log"; lines=${#old[@]}; }
    nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$port" -P "$pidf" "$@" \
        >>"$log" 2>&1 &
    pid=$!
    local rc=0
    _wait_ready "$pid" test -s "$pidf" || rc=$?
    if ((rc == 0)); then
        PIDS+=("$pid")
        return 0
    fi
    if ((rc == 2)); then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        fail "nbdkit $name did not start listening on port $port within 15 s"
    fi
    _address_taken "$name" "$pid" "$lines" "nbdkit $name did not start on port $port"
    return 1
}

# _address_taken NAME PID LINES WHAT: the server PID, started for NAME,
# exited before it listened; returns when this attempt's lines of
# $T/NAME.log (those past the first LINES) say its address was taken
# (the caller tries again), else fails the test with WHAT and them.
_address_taken() {
    local attempt=() line
    wait "$2" 2>/dev/null || true
    # Only this attempt's lines.
    mapfile -t -s "$3" attempt <"$T/$1.log"
    for line in "${attempt[@]}"; do
        [[ ${line,,} == *"address already in use"* || ${line,,} == *"failed to bind"* ]] && return 0
    done
    printf '%s\n' "${attempt[@]}" >&2
    fail "$4"
}

# start_nbdkit_tcp NAME [NBDKIT OPTIONS...] PLUGIN [PARAMS...]
# nbdkit on 127.0.0.1 and a free port, like start_nbdkit otherwise (-f,
# --exit-with-parent, pidfile $T/NAME.pid, log $T/NAME.log).  Sets TCP_PORT
# (nbdkit_tcp_port NAME prints it later) and remembers the arguments for
# restart_nbdkit_tcp.  (This replaces lib.sh's start_nbdkit_tcp, which does
# the same but picks random ports and does not remember the arguments.)
start_nbdkit_tcp() {
    require_cmd nbdkit
    local name=$1; shift
    local i port
    : >"$T/$name.log"
    for ((i = 0; i < 20; i++)); do
        _pick_tcp_port || fail "could not find a free TCP port"
        port=$FREE_TCP_PORT
        if _nbdkit_tcp_on "$name" "$port" "$@"; then
            TCP_PORT=$port
            echo "$port" >"$T/$name.tcpport"
            printf '%s\0' "$@" >"$T/$name.tcpargs"
            return 0
        fi
    done
    fail "no free TCP port for nbdkit $name after 20 tries"
}

# nbdkit_tcp_port NAME: the port of start_nbdkit_tcp NAME.
nbdkit_tcp_port() {
    [[ -s $T/$1.tcpport ]] || fail "no nbdkit_tcp server called $1"
    local port
    read -r port <"$T/$1.tcpport"
    echo "$port"
}

# restart_nbdkit_tcp NAME: stop nbdkit NAME (if it still runs: a test may
# stop_server NAME itself, wait, then restart) and start it again on the
# same port with the same arguments (a server restarted: what it held in
# memory is gone, a file plugin's file stays).  Retries for 5 s while the
# port is still in use.  Appends to $T/NAME.log.  Sets TCP_PORT.
restart_nbdkit_tcp() {
    local name=$1 port args=() i
    [[ -s $T/$name.tcpport ]] || fail "no nbdkit_tcp server called $name"
    read -r port <"$T/$name.tcpport"
    mapfile -d '' args <"$T/$name.tcpargs"
    stop_server "$name"
    for ((i = 0; i < 50; i++)); do
        if _nbdkit_tcp_on "$name" "$port" "${args[@]}"; then
            TCP_PORT=$port
            return 0
        fi
        nap 0.1
    done
    fail "nbdkit $name could not listen again on port $port"
}

# start_drop_proxy NAME TARGET [PROXY OPTIONS...]
# drop_proxy.py on 127.0.0.1 (a free port) forwarding to TARGET, a port on
# 127.0.0.1 or HOST:PORT on the loopback interface, with the options given
# (--drop-after BYTES, --drop-every BYTES, --drops N|all, --mode
# close|reset|silence, --refuse-after-drop SECONDS, --refuse-mode
# close|unlisten, --lifetime SECONDS...).  Its events (and any error) go to
# $T/NAME.log, one line each.
# Waits (15 s at most) until it listens, then sets PROXY_PORT and PROXY_LOG
# (proxy_port NAME prints the port later).
start_drop_proxy() {
    local name=$1 target=$2; shift 2
    [[ $target == *:* ]] || target=127.0.0.1:$target
    _start_proxy "$name" --target "$target" "$@"
    read -r PROXY_PORT <"$T/$name.port"
}

# _start_proxy NAME PROXY-ARGUMENTS...: drop_proxy.py with them, its
# events in $T/NAME.log, waited for (15 s at most) until it listens (it
# writes $T/NAME.port then); sets PROXY_LOG.
_start_proxy() {
    local name=$1; shift
    local portf=$T/$name.port pidf=$T/$name.pid pid rc=0
    # Emptied, not removed (no rm): the proxy renames FILE.tmp over FILE.
    : >"$portf"
    : >"$pidf"
    "$PROXY_PY" "$TEST_LIB/drop_proxy.py" --listen-port-file "$portf" \
        --exit-with-parent "$@" >"$T/$name.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    _wait_ready "$pid" test -s "$portf" || rc=$?
    case $rc in
    0) echo "$pid" >"$pidf"; PROXY_LOG=$T/$name.log ;;
    1) cat "$T/$name.log" >&2 || true; fail "drop proxy $name exited before listening" ;;
    *) fail "drop proxy $name did not start listening within 15 s" ;;
    esac
}

# proxy_port NAME: the port of start_drop_proxy NAME.
proxy_port() {
    [[ -s $T/$1.port ]] || fail "no drop proxy called $1"
    local port
    read -r port <"$T/$1.port"
    echo "$port"
}

# proxy_drops LOGFILE: how many connections the proxy dropped so far
# (printed; proxy_drops_v sets PROXY_DROPS instead, without a $(...)).
proxy_drops() {
    proxy_drops_v "$1"
    echo "$PROXY_DROPS"
}
proxy_drops_v() {
    [[ -f $1 ]] || fail "proxy_drops: no log $1"
    local lines=() line
    PROXY_DROPS=0
    mapfile -t lines <"$1"
    for line in "${lines[@]}"; do
        [[ $line == "drop "* ]] && PROXY_DROPS=$((PROXY_DROPS + 1))
    done
    return 0
}
