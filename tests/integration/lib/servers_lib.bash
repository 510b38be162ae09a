# Real NBD servers that a test kills and starts again, for the --retry and
# --checkpoint matrix (retry-matrix-*.sh, checkpoint-matrix-*.sh,
# retry-qemu-nbd-multi-conn.sh).  Source after lib.sh and proxy_lib.bash:
#     source "$(dirname "$0")/lib/lib.sh"
#     source "$TEST_LIB/proxy_lib.bash"
#     source "$TEST_LIB/servers_lib.bash"
#
#     start_server src qemu-raw tcp "$T/src.img" ro
#     ... nbdcopy ... "$(server_uri src)" ...
#     kill_server src; sleep 1; restart_server src
#     assert_server_alive src "cell qemu-raw/tcp/close"
#
# Kinds (what serves the file; all listen on 127.0.0.1 or a socket in $T):
#   qemu-raw          qemu-nbd -t --shared=0 -f raw (multi-conn; -r when ro)
#   qemu-qcow2        qemu-nbd -t --shared=0 -f qcow2 (multi-conn; a qcow2
#                     destination keeps its metadata in memory until a
#                     flush: a SIGKILL loses what was not flushed)
#   nbdkit            nbdkit -t 1 file (-t 1 unless start_server says
#                     otherwise: nbdkit 1.32.5 aborts now and then with
#                     several threads when a connection drops:
#                     raw_send_socket "Assertion `sock >= 0' failed")
#   nbdkit-writeback  nbdkit -t 1 --filter=cache file cache=writeback: the
#                     writes it acknowledged stay in its cache (a temporary
#                     file it deletes) until a flush, so a SIGKILL loses
#                     every write it had not flushed
#   nbd-server        nbd-server 3.24 with a config file ($T/NAME.conf),
#                     export "disk", flush=true (multi-conn).  It always
#                     runs as a daemon (-d would serve one connection and
#                     exit), one process per connection in its own process
#                     group: it is killed as a group, and logs to syslog.
# Transports:
#   tcp       127.0.0.1, a free port (kept for restarts)
#   unix      $T/NAME.sock (the same path after a restart)
#   tls       tcp with TLS required, PSK ($PSK_FILE, user alice: call
#             make_psk first)
#   tls-unix  unix with TLS required, PSK
# nbd-server has no PSK (its TLS takes x509 certificates only: certfile,
#   keyfile, cacertfile; and 3.24 hangs up at the first option after
#   STARTTLS, for libnbd and qemu-img alike), so nbd-server with tls or
#   tls-unix is refused.
#
# Each server NAME has $T/NAME.log (its output; nbd-server's goes to
# syslog once it is a daemon), $T/NAME.pid, and $T/NAME.server (what it
# was started with: restart_server NAME starts the same server, the same
# file, on the same address).  All are stopped at exit.  Call these
# helpers directly, never inside $(...): nbdkit exits with its parent.

# The globals set here (SERVER_URI...) are for the tests.
# shellcheck disable=SC2034

# _server_field NAME KEY: a field of $T/NAME.server (KEY=VALUE lines).
_server_field() {
    local value
    _server_get value "$1" "$2"
    printf '%s\n' "$value"
}

# _server_get VAR NAME KEY: VAR=$(_server_field NAME KEY), read in bash
# (the helpers below run it a dozen times a server start: no $(...)).
_server_get() {
    [[ -s $T/$2.server ]] || fail "no server called $2"
    local _sg_line
    printf -v "$1" '%s' ""
    while IFS= read -r _sg_line; do
        if [[ $_sg_line == "$3="* ]]; then
            printf -v "$1" '%s' "${_sg_line#*=}"
            return 0
        fi
    done <"$T/$2.server"
}

# _server_probe ADDRESS: an NBD server greets at ADDRESS (a TCP port on
# 127.0.0.1 or a Unix socket path): its newstyle greeting is read, then
# the client's flags and NBD_OPT_ABORT are sent (a polite goodbye: no
# "negotiation failed" in the server's log), and the connection closed.
# Exit status 0 when the server greeted.  (_wait_ready runs it 20 times a
# second while a server starts: on TCP it is bash's /dev/tcp, with no
# process; a Unix socket takes Python, started only once the socket's
# file is there, before which no connection can be made.)
_server_probe() {
    if [[ $1 != /* ]]; then
        _server_probe_tcp "$1"
        return
    fi
    [[ -S $1 ]] || return 1
    "$PROXY_PY" - "$1" <<'PY' 2>/dev/null
import socket, struct, sys
a = sys.argv[1]
s = socket.socket(socket.AF_UNIX if a.startswith("/") else socket.AF_INET)
s.settimeout(2)
def read(n):
    got = b""
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b:
            break
        got += b
    return got
try:
    s.connect(a if a.startswith("/") else ("127.0.0.1", int(a)))
    greeting = read(18)
    if greeting[:8] != b"NBDMAGIC":
        sys.exit(1)
    if greeting[8:16] == b"IHAVEOPT":
        s.sendall(struct.pack(">I", 1) + b"IHAVEOPT" + struct.pack(">II", 2, 0))
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
    sys.exit(0)
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

# _server_probe_tcp PORT: _server_probe on 127.0.0.1:PORT, in bash: the
# same bytes read and sent, each read given 2 s.
_server_probe_tcp() {
    local fd greeting='' rc=1
    { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    read -r -t 2 -N 16 -u "$fd" greeting 2>/dev/null || true
    if [[ $greeting == NBDMAGIC* ]]; then
        rc=0
        if [[ $greeting == NBDMAGICIHAVEOPT ]]; then
            # The client's flags (1: fixed newstyle), then NBD_OPT_ABORT
            # (2) with no data; what the server answers is read until it
            # hangs up.
            { printf '\0\0\0\1IHAVEOPT\0\0\0\2\0\0\0\0' >&"$fd"; } 2>/dev/null || true
            while read -r -t 2 -u "$fd" -d '' _ 2>/dev/null; do :; done
        fi
    fi
    exec {fd}>&-
    return "$rc"
}

# _server_address NAME: the port or the socket path of server NAME.
_server_address() {
    local addr
    _server_address_v addr "$1"
    echo "$addr"
}

# _server_address_v VAR NAME: VAR=$(_server_address NAME), no $(...).
_server_address_v() {
    local _sa_transport
    _server_get _sa_transport "$2" transport
    case $_sa_transport in
    tcp | tls) _server_get "$1" "$2" port ;;
    *) printf -v "$1" '%s' "$T/$2.sock" ;;
    esac
}

# server_uri_at NAME ADDRESS: the URI of server NAME's export reached at
# ADDRESS instead of its own (a proxy's port or socket path in front of
# it): the same scheme, export name and TLS parameters.
server_uri_at() {
    local uri
    server_uri_at_v uri "$1" "$2"
    echo "$uri"
}

# server_uri_at_v VAR NAME ADDRESS: VAR=$(server_uri_at NAME ADDRESS),
# no $(...).
server_uri_at_v() {
    local _su_name=$2 _su_addr=$3 _su_transport _su_kind _su_export="" _su_uri=
    _server_get _su_transport "$_su_name" transport
    _server_get _su_kind "$_su_name" kind
    [[ $_su_kind == nbd-server ]] && _su_export=disk
    case $_su_transport in
    tcp) _su_uri="nbd://127.0.0.1:$_su_addr/$_su_export" ;;
    unix) _su_uri="nbd+unix:///$_su_export?socket=$_su_addr" ;;
    tls) _su_uri="nbds://alice@127.0.0.1:$_su_addr/$_su_export?tls-psk-file=$PSK_FILE" ;;
    tls-unix) _su_uri="nbds+unix://alice@/$_su_export?socket=$_su_addr&tls-psk-file=$PSK_FILE" ;;
    esac
    printf -v "$1" '%s' "$_su_uri"
}

# server_uri NAME: the URI of server NAME itself.
server_uri() {
    local uri
    server_uri_v uri "$1"
    echo "$uri"
}

# server_uri_v VAR NAME: VAR=$(server_uri NAME), no $(...).
server_uri_v() {
    local _sv_addr
    _server_address_v _sv_addr "$2"
    server_uri_at_v "$1" "$2" "$_sv_addr"
}

# server_pid NAME: the pid of server NAME (nbd-server: its daemon, the
# leader of its process group).
server_pid() {
    local pid=
    server_pid_v pid "$1"
    echo "$pid"
}
server_pid_v() { # VAR NAME: VAR=$(server_pid NAME), no $(...)
    [[ -s $T/$2.pid ]] || fail "server $2 has no pid file"
    read -r "$1" <"$T/$2.pid" || [[ -n ${!1} ]] # (a last line without its newline)
}

# _server_launch NAME: start server NAME as $T/NAME.server says, at its
# address.  Returns 0 once it greets there, 1 when its port was taken
# (a TCP server whose port someone else took meanwhile); fails the test
# for any other failure to start.
_server_launch() {
    local name=$1 kind transport file mode addr args=() pid= threads
    _server_get kind "$name" kind
    _server_get transport "$name" transport
    _server_get file "$name" file
    _server_get mode "$name" mode
    _server_address_v addr "$name"
    local log=$T/$name.log pidf=$T/$name.pid lines=0 old=()
    [[ -f $log ]] && { mapfile -t old <"$log"; lines=${#old[@]}; }
    [[ ! -e $pidf ]] || rm -f "$pidf"
    if [[ $transport == unix || $transport == tls-unix ]] && [[ -e $addr ]]; then rm -f "$addr"; fi
    case $kind in
    qemu-raw | qemu-qcow2)
        local fmt=raw
        [[ $kind == qemu-qcow2 ]] && fmt=qcow2
        args=(-t --shared=0 -f "$fmt" --pid-file="$pidf")
        [[ $mode == ro ]] && args+=(-r)
        # Writes go to the host's page cache (--cache=writeback, the
        # default): a SIGKILL loses none of a raw file's; a qcow2's
        # metadata (its L2 and refcount caches) waits for a flush.
        case $transport in
        tcp | tls) args+=(-b 127.0.0.1 -p "$addr") ;;
        *) args+=(-k "$addr") ;;
        esac
        [[ $transport == tls* ]] &&
            args+=(--object "tls-creds-psk,id=tls0,endpoint=server,dir=${PSK_FILE%/*}"
                --tls-creds tls0)
        qemu-nbd "${args[@]}" "$file" >>"$log" 2>&1 </dev/null &
        pid=$!
        disown "$pid" # no "Killed" notice from bash when kill_server kills it
        ;;
    nbdkit | nbdkit-writeback)
        args=(-f --exit-with-parent -P "$pidf")
        _server_get threads "$name" threads
        [[ $threads == default ]] || args+=(-t "${threads:-1}")
        [[ $mode == ro ]] && args+=(-r)
        case $transport in
        tcp | tls) args+=(-i 127.0.0.1 -p "$addr") ;;
        *) args+=(-U "$addr") ;;
        esac
        [[ $transport == tls* ]] && args+=(--tls=require --tls-psk="$PSK_FILE")
        if [[ $kind == nbdkit-writeback ]]; then
            args+=(--filter=cache file "$file" cache=writeback)
        else
            args+=(file "$file")
        fi
        nbdkit "${args[@]}" >>"$log" 2>&1 &
        pid=$!
        disown "$pid"
        ;;
    nbd-server)
        local conf=$T/$name.conf
        {
            echo "[generic]"
            case $transport in
            tcp) printf 'listenaddr = 127.0.0.1\nport = %s\n' "$addr" ;;
            unix) printf 'unixsock = %s\n' "$addr" ;;
            esac
            echo "[disk]"
            echo "exportname = $file"
            echo "flush = true"
            [[ $mode == ro ]] && echo "readonly = true"
        } >"$conf"
        # It daemonizes (its parent exits 0 at once) and writes its pid
        # file before it listens.
        nbd-server -C "$conf" -p "$pidf" >>"$log" 2>&1 </dev/null ||
            { tail -n 5 "$log" >&2; fail "nbd-server $name did not start"; }
        _wait_ready "" test -s "$pidf" || fail "nbd-server $name wrote no pid file"
        read -r pid <"$pidf" || [[ -n $pid ]]
        ;;
    *) fail "unknown server kind $kind" ;;
    esac
    local rc=0
    _wait_ready "$pid" _server_probe "$addr" || rc=$?
    if ((rc == 0)); then
        # A greeting on a TCP port may come from another test's server
        # that took the port while ours was down: then ours fails to
        # bind, and is not the one that greeted.
        if ! _server_listens "$pid" "$addr"; then
            _server_kill_pid "$name" "$pid"
            msg "$kind $name: port $addr is another process's"
            return 1
        fi
        if [[ $kind == nbd-server ]]; then DAEMON_PIDS+=("$pid"); else PIDS+=("$pid"); fi
        [[ -s $pidf ]] || echo "$pid" >"$pidf"
        return 0
    fi
    if ((rc == 2)); then
        _server_kill_pid "$name" "$pid"
        fail "$kind $name did not greet at $addr within 15 s"
    fi
    _address_taken "$name" "$pid" "$lines" "$kind $name did not start at $addr"
    return 1
}

# _server_listens PID ADDRESS: PID is what listens at ADDRESS (a Unix
# socket in $T is ours by its path; a TCP port is checked with ss -p,
# when there is ss).
_server_listens() {
    [[ $2 == /* ]] && return 0
    command -v ss >/dev/null 2>&1 || return 0
    local listeners=
    ss -Hltnp "( sport = :$2 )" >"$T/listeners" || true
    IFS= read -r -d '' listeners <"$T/listeners" || true
    [[ $listeners == *"pid=$1,"* ]]
}

# _server_kill_pid NAME PID: SIGKILL server NAME's process PID (and, for
# nbd-server, every process of its group: each serves a connection) and
# wait until it is gone.
_server_kill_pid() {
    local target=$2 kind
    _server_get kind "$1" kind
    [[ $kind == nbd-server ]] && target=-$2
    _stop_pid KILL "$target" "$2"
}

# start_server NAME KIND TRANSPORT FILE ro|rw [THREADS]: start a server
# (see the top) of FILE, read-only (a source) or writable (a destination);
# sets SERVER_URI (its URI), SERVER_ADDR (its port or socket path).
# THREADS: nbdkit's -t (1 unless given; "default" for nbdkit's own).
start_server() {
    local name=$1 kind=$2 transport=$3 file=$4 mode=$5 threads=${6:-1} port i
    case $kind in
    qemu-*) require_cmd qemu-nbd ;;
    nbdkit*) require_cmd nbdkit ;;
    nbd-server) require_cmd nbd-server ;;
    esac
    if [[ $transport == tls* ]]; then
        [[ $kind != nbd-server ]] ||
            fail "nbd-server has no TLS with PSK (x509 only): no $kind/$transport server"
        [[ -n ${PSK_FILE:-} ]] || fail "start_server $name: TLS needs make_psk first"
    fi
    : >"$T/$name.log"
    for ((i = 0; i < 20; i++)); do
        port=
        if [[ $transport == tcp || $transport == tls ]]; then
            _pick_tcp_port || fail "could not find a free TCP port"
            port=$FREE_TCP_PORT
        fi
        printf 'kind=%s\ntransport=%s\nfile=%s\nmode=%s\nport=%s\nthreads=%s\n' \
            "$kind" "$transport" "$file" "$mode" "$port" "$threads" >"$T/$name.server"
        if _server_launch "$name"; then
            _server_address_v SERVER_ADDR "$name"
            server_uri_v SERVER_URI "$name"
            if [[ " ${_SERVERS_AT_EXIT:-} " != *" $name "* ]]; then
                at_exit "_server_at_exit $name"
                _SERVERS_AT_EXIT+=" $name"
            fi
            return 0
        fi
    done
    fail "no free TCP port for $kind $name after 20 tries"
}

# At exit: nbd-server's connection processes go with their group (lib.sh
# stops the daemon itself with SIGTERM).
_server_at_exit() {
    local kind pid=
    _server_get kind "$1" kind
    [[ $kind == nbd-server && -s $T/$1.pid ]] || return 0
    read -r pid <"$T/$1.pid" || [[ -n $pid ]]
    if _ours "$pid"; then kill -9 -- "-$pid" 2>/dev/null || true; fi
    return 0
}

# kill_server NAME: SIGKILL server NAME (all of it) and wait until it is
# gone: a crash, nothing flushed, its connections reset by the kernel.
kill_server() {
    local pid= kind
    server_pid_v pid "$1"
    _server_get kind "$1" kind
    msg "SIGKILL $kind $1 (pid $pid)"
    _server_kill_pid "$1" "$pid"
    rm -f "$T/$1.pid"
}

# freeze_server NAME / thaw_server NAME: SIGSTOP / SIGCONT server NAME, all
# of it (nbd-server: its process group): frozen, it answers nothing and
# its connections stay open, so that a copy cannot end while a test,
# however late on a loaded machine, looks at it before a kill.
freeze_server() { _server_signal "$1" STOP; }
thaw_server() { _server_signal "$1" CONT; }
_server_signal() {
    local target= kind
    server_pid_v target "$1"
    _server_get kind "$1" kind
    [[ $kind == nbd-server ]] && target=-$target
    kill -"$2" -- "$target" 2>/dev/null || true
}

# restart_server NAME: start server NAME again (killed first if it still
# runs), the same kind, file and arguments, on the same address; retries
# for 5 s while a TCP port is still taken.  Sets SERVER_URI.
restart_server() {
    local name=$1 i kind addr
    [[ -s $T/$name.pid ]] && kill_server "$name"
    _server_get kind "$name" kind
    _server_address_v addr "$name"
    for ((i = 0; i < 50; i++)); do
        if _server_launch "$name"; then
            server_uri_v SERVER_URI "$name"
            msg "restarted $kind $name at $addr"
            return 0
        fi
        nap 0.1
    done
    fail "$kind $name could not listen again at $addr"
}

# server_alive NAME: exit status 0 while server NAME runs.
server_alive() {
    local pid=
    [[ -s $T/$1.pid ]] && { read -r pid <"$T/$1.pid" || [[ -n $pid ]]; } && _alive "$pid"
}

# assert_server_alive NAME CONTEXT: server NAME still runs; if it died
# (and no kill_server stopped it), the test fails saying so: the server's
# own crash, not nbdcopy's fault (with its last words, such as nbdkit's
# assertion failures).
assert_server_alive() {
    server_alive "$1" && return 0
    local kind last
    _server_get kind "$1" kind
    last=$(grep -m1 -iE 'assert|abort|segmentation|core dumped' "$T/$1.log" 2>/dev/null) ||
        last=$(tail -n 1 "$T/$1.log" 2>/dev/null) || true
    fail "$2: the $kind server '$1' died (its own crash, see $T/$1.log${last:+: $last}), not nbdcopy"
}

# start_drop_proxy_unix NAME TARGET-PATH [PROXY OPTIONS...]: drop_proxy.py
# listening on $T/NAME.sock, forwarding to the Unix socket TARGET-PATH
# (the options of start_drop_proxy, but --mode reset: no RST on a Unix
# socket).  Sets PROXY_SOCK and PROXY_LOG.
start_drop_proxy_unix() {
    local name=$1 target=$2; shift 2
    [[ ! -e $T/$name.sock ]] || rm -f "$T/$name.sock"
    _start_proxy "$name" --listen-unix "$T/$name.sock" --target "unix:$target" "$@"
    PROXY_SOCK=$T/$name.sock
}

# start_proxy_for NAME SERVER [PROXY OPTIONS...]: a drop proxy NAME in
# front of server SERVER, on the same kind of transport (TCP for tcp and
# tls, a Unix socket for unix and tls-unix).  Sets PROXY_URI (SERVER's
# export through the proxy) and PROXY_LOG.
start_proxy_for() {
    local name=$1 server=$2 transport addr; shift 2
    stop_server "$name"
    _server_get transport "$server" transport
    _server_address_v addr "$server"
    case $transport in
    tcp | tls)
        start_drop_proxy "$name" "$addr" "$@"
        server_uri_at_v PROXY_URI "$server" "$PROXY_PORT"
        ;;
    *)
        start_drop_proxy_unix "$name" "$addr" "$@"
        server_uri_at_v PROXY_URI "$server" "$PROXY_SOCK"
        ;;
    esac
}
