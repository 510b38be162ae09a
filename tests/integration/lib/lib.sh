# Shared helpers for the end-to-end tests.  Source it first thing:
#     source "$(dirname "$0")/lib/lib.sh"
# The other helpers sit beside it, in $TEST_LIB (incremental_lib.bash,
# hostile_nbd_server.py, blkhash_reference.py, pty_run.py, ...).
#
# Environment:
#   NBDCOPY     the binary under test (default: nbdcopy on $PATH)
#   KEEP_TMP=1  keep the per-test temporary directory (printed) for debugging
#
# Exit status convention (CTest): 0 pass, 77 skipped, anything else fail.

set -euo pipefail

NBDCOPY=${NBDCOPY:-nbdcopy}
TEST_NAME=$(basename "$0" .sh)

# A command that stops the test through set -e says where, as fail does;
# without this the test ends with no message at all.  Only where set -e is
# on, and only in the test's own shell: inside $(...) a failed command is
# no exit, and the clean-ups run with set +e.
set -o errtrace
trap '_lib_err_status=$? _lib_err_line=$LINENO
    if [[ $- == *e* ]] && ((BASH_SUBSHELL == 0)); then
        echo "[$TEST_NAME] FAIL: set -e: status $_lib_err_status of \"$BASH_COMMAND\" at ${BASH_SOURCE[0]##*/}:$_lib_err_line${FUNCNAME:+ (in ${FUNCNAME[*]})}" >&2
    fi' ERR
# The directory of this file and the other helpers (an absolute path).
TEST_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Unix socket paths are limited to ~107 bytes, so keep the directory short
# and under /tmp whatever $TMPDIR says.
T=$(mktemp -d /tmp/nbdcp.XXXXXX)
# Every process this test starts inherits this mark, daemons included: a
# pid is signalled only while it still carries it (_ours). Pids wrap in
# minutes here (pid_max 32768, suites side by side): a server that died
# on its own leaves a pid that another test's proxy may hold next, and a
# clean-up that killed it by number stopped that proxy mid-copy.
export NBDCOPY_TEST_OWNER=$T

PIDS=()        # children started by us (nbdkit -f ... &)
DAEMON_PIDS=() # daemons that are not our children (qemu-nbd --fork)
LOOPS=()       # loop devices we attached
MOUNTS=()      # file systems we mounted

MiB=$((1024 * 1024))

# nap SECONDS: sleep without a fork. Starting a process costs 3-8 ms of
# CPU on the small VMs the suite runs on, and the polling loops below nap
# hundreds of times a test; a read that times out on a fifo nobody writes
# (we hold its write side) costs none.
mkfifo "$T/.nap"
exec {NAP_FD}<>"$T/.nap"
nap() { read -rt "$1" -u "$NAP_FD" _ || true; }

# wait_handles_signal PID SIGNUM: waits (up to 30 s) until process PID has a
# handler for signal SIGNUM (its SigCgt mask), so a signal sent next reaches
# the program and not the default action: a slow start (a sanitizer build on
# a loaded machine) can take more than a second to get there.
wait_handles_signal() {
    local pid=$1 bit=$(($2 - 1)) key mask i
    for ((i = 0; i < 600; i++)); do
        mask=
        # Still this shell's fork, not yet the program (whose handlers these
        # are not: lib.sh traps TERM): wait for the exec.
        if [[ /proc/$pid/exe -ef /proc/$$/exe ]]; then nap 0.05; continue; fi
        # (read, not sed: no fork 20 times a second)
        while read -r key mask; do
            [[ $key == SigCgt: ]] && break
            mask=
        done 2>/dev/null <"/proc/$pid/status" || true
        [[ -n $mask ]] || return 0   # gone: the caller's wait says how it ended
        (((16#$mask >> bit) & 1)) && return 0
        nap 0.05
    done
    fail "process $pid never installed a handler for signal $2"
}

# python3 is the system's interpreter, for the scripts and for every
# helper they start (#!/usr/bin/env python3 included): a version manager's
# python3 on $PATH (pyenv's shim) is a shell script that runs a dozen
# processes, 0.5 s of CPU per start here against 0.04 s.
if [[ -x /usr/bin/python3 && $(type -P python3) != /usr/bin/python3 ]]; then
    mkdir "$T/.bin"
    ln -s /usr/bin/python3 "$T/.bin/python3"
    PATH=$T/.bin:$PATH
fi

msg() { echo "[$TEST_NAME] $*" >&2; }

fail() {
    echo "[$TEST_NAME] FAIL: $*" >&2
    exit 1
}

skip() {
    echo "[$TEST_NAME] SKIP: $*" >&2
    exit 77
}

# Is PID running?  A zombie counts as gone: daemons re-parented to a
# subreaper that is slow to reap them would otherwise look alive.
# (No fork: the waits poll it 20 times a second.)
_alive() {
    local stat
    [[ -n $1 ]] || return 1
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
    stat=${stat##*) }
    [[ -n $stat && ${stat:0:1} != Z ]]
}

# _ours PID: PID is a process this test started (it carries our mark).
# (No fork: the clean-up runs it for every pid.)
_ours() {
    local env=() e
    [[ -n $1 ]] || return 1
    mapfile -d '' env 2>/dev/null <"/proc/$1/environ" || return 1
    for e in "${env[@]}"; do
        [[ $e == "NBDCOPY_TEST_OWNER=$T" ]] && return 0
    done
    return 1
}

# Stop every server we started and detach every loop device we attached.
release_resources() {
    local - pid i dev
    set +e
    for pid in "${PIDS[@]}" "${DAEMON_PIDS[@]}"; do
        _ours "$pid" && kill "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
    for pid in "${DAEMON_PIDS[@]}"; do
        for ((i = 0; i < 50; i++)); do
            _alive "$pid" || break
            nap 0.1
        done
        _ours "$pid" && kill -9 "$pid" 2>/dev/null
    done
    for dev in "${MOUNTS[@]}"; do
        umount "$dev" 2>/dev/null || umount -l "$dev" 2>/dev/null
    done
    for dev in "${LOOPS[@]}"; do
        losetup -d "$dev" 2>/dev/null
    done
    PIDS=() DAEMON_PIDS=() LOOPS=() MOUNTS=()
    return 0
}

# at_exit COMMAND: run COMMAND (a string, as by eval) when the test exits,
# however it exits (pass, fail, skip, a signal), before the servers are
# stopped and $T is removed; the last one added runs first.  A test that
# needs more clean-up than release_resources does adds it here: a test
# never sets its own EXIT trap, which would replace this one (and a trap
# that calls _cleanup at its end is skipped by set -e as soon as one of
# its commands fails).
AT_EXIT=()
at_exit() { AT_EXIT+=("$1"); }

_cleanup() {
    local rc=$? i
    set +eu
    for ((i = ${#AT_EXIT[@]} - 1; i >= 0; i--)); do
        eval "${AT_EXIT[i]}"
    done
    release_resources
    # (the builtin in this shell: a subshell would count its own times)
    [[ -z ${TEST_CPU_LOG:-} ]] || times >"$TEST_CPU_LOG.${TEST_NAME//\//_}.$$"
    if [[ $rc -ne 0 && $rc -ne 77 ]]; then
        # Help whoever reads the CTest log: show what the servers said.
        local f
        for f in "$T"/*.log; do
            [[ -s $f ]] || continue
            echo "--- tail of $(basename "$f") ---" >&2
            tail -n 20 "$f" >&2
        done
    fi
    if [[ ${KEEP_TMP:-0} == 1 ]]; then
        echo "[$TEST_NAME] kept $T" >&2
    else
        rm -rf "$T"
    fi
    exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

require_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
    done
}

# Does the binary under test exist at all?  (A missing binary is a failure,
# not a skip: the test suite should not go green without the tool.)
command -v "$NBDCOPY" >/dev/null 2>&1 || fail "NBDCOPY=$NBDCOPY not found"

# ---------------------------------------------------------------------------
# Parts: a test whose cases mostly wait (for a silence limit, a --rate, a
# server coming back) runs them side by side.  Called at the top, after
# the sourcing:
#     run_parts engine-parallel engine-sync signals
#     if in_part engine-parallel; then ...; fi
# run_parts runs this script once per PART, at once, each as its own
# process with TEST_PART=PART (its own $T, servers and clean-up; its
# messages say [test/PART]), and exits: 0 when every part passed (77 when
# all skipped), else a failure naming the parts that failed, each part's
# output shown.  In a part's process it returns at once, and in_part NAME
# says whether this process runs part NAME.
run_parts() {
    [[ -z ${TEST_PART:-} ]] || return 0
    local parts=("$@") pids=() i rc failed=() skipped=0
    for i in "${!parts[@]}"; do
        TEST_PART=${parts[i]} bash "$0" >"$T/part-${parts[i]}.out" 2>&1 &
        pids+=($!)
        PIDS+=($!) # a test stopped by a signal stops its parts
    done
    for i in "${!parts[@]}"; do
        rc=0
        wait "${pids[i]}" || rc=$?
        _forget_pid "${pids[i]}"
        cat "$T/part-${parts[i]}.out" >&2
        case $rc in
        0) ;;
        77) skipped=$((skipped + 1)) ;;
        *) failed+=("${parts[i]} (exit status $rc)") ;;
        esac
    done
    ((${#failed[@]} == 0)) || fail "parts failed: ${failed[*]}"
    ((skipped < ${#parts[@]})) || skip "every part skipped"
    msg "PASS: all ${#parts[@]} parts"
    exit 0
}
in_part() { [[ -z ${TEST_PART:-} || $TEST_PART == "$1" ]]; }
[[ -z ${TEST_PART:-} ]] || TEST_NAME+=/$TEST_PART

# ---------------------------------------------------------------------------
# Servers.  Each server NAME listens on $T/NAME.sock; its stdout/stderr go to
# $T/NAME.log.

sock_for() { echo "$T/$1.sock"; }
uri_for() { echo "nbd+unix:///?socket=$T/$1.sock"; }

# _wait_ready PID CHECK...: run CHECK (a command) 20 times a second until
# it succeeds (status 0), PID (unless empty) is gone (1), or 15 s pass (2).
_wait_ready() {
    local pid=$1 i
    shift
    for ((i = 0; i < 300; i++)); do
        "$@" && return 0
        [[ -z $pid ]] || _alive "$pid" || return 1
        nap 0.05
    done
    return 2
}

_wait_pidfile() { # PIDFILE PID-OR-EMPTY WHAT NAME
    local rc=0
    _wait_ready "$2" test -s "$1" || rc=$?
    case $rc in
    0) return 0 ;;
    1) cat "$T/$4.log" >&2 || true; fail "$3 exited before becoming ready" ;;
    *) fail "$3 did not become ready within 15 s" ;;
    esac
}

# start_nbdkit NAME [NBDKIT OPTIONS...] PLUGIN [PARAMS...]
# Runs nbdkit in the foreground as our child, dies with us.  nbdkit writes
# the pidfile only once it is listening, so that is the readiness signal.
start_nbdkit() {
    require_cmd nbdkit
    local name=$1; shift
    local sock=$T/$name.sock pidf=$T/$name.pid
    [[ ! -e $sock && ! -e $pidf ]] || rm -f "$sock" "$pidf"
    nbdkit -f --exit-with-parent -U "$sock" -P "$pidf" "$@" \
        >"$T/$name.log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    _wait_pidfile "$pidf" "$pid" "nbdkit $name" "$name"
}

# start_qemu_nbd NAME [QEMU-NBD OPTIONS...] FILE
# Uses --fork: the parent returns once the server is listening.  Without -t
# qemu-nbd exits after its (last) client disconnects.
start_qemu_nbd() {
    require_cmd qemu-nbd
    local name=$1; shift
    local sock=$T/$name.sock pidf=$T/$name.pid
    rm -f "$sock" "$pidf"
    qemu-nbd --fork -k "$sock" --pid-file="$pidf" "$@" \
        >"$T/$name.log" 2>&1 </dev/null ||
        { cat "$T/$name.log" >&2; fail "qemu-nbd $name failed to start"; }
    _wait_pidfile "$pidf" "" "qemu-nbd $name" "$name"
    local pid
    read -r pid <"$pidf"
    DAEMON_PIDS+=("$pid")
}

# _forget_pid PID: a stopped server's pid leaves PIDS / DAEMON_PIDS, so
# that the clean-up at exit never signals a process that reused it (pids
# wrap quickly when several test suites run at once).
_forget_pid() {
    local p keep=()
    for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
    keep=()
    for p in "${DAEMON_PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    DAEMON_PIDS=("${keep[@]}")
}

# _stop_pid SIGNAL TARGET PID: send SIGNAL to TARGET (PID, or -PID for its
# process group), wait (5 s at most) until PID is gone, and forget it.
_stop_pid() {
    # (The process may end between _ours and kill, of the SIGKILL a test
    # just sent it: a kill that finds it gone is no error, and under set -e
    # it would end the test without a word.)
    if _ours "$3"; then kill -"$1" -- "$2" 2>/dev/null || true; fi
    _wait_ready "" _gone "$3" || true
    wait "$3" 2>/dev/null || true
    _forget_pid "$3"
}
_gone() { ! _alive "$1"; }

# stop_server NAME: stop a server started by start_nbdkit / start_qemu_nbd.
stop_server() {
    local pidf=$T/$1.pid pid
    [[ -s $pidf ]] || return 0
    read -r pid <"$pidf"
    _stop_pid TERM "$pid" "$pid"
    [[ ! -e $pidf && ! -e $T/$1.sock ]] || rm -f "$pidf" "$T/$1.sock"
}

# ---------------------------------------------------------------------------
# TLS (PSK).  make_psk sets PSK_FILE (user alice) and PSK_KEY (the hex key).
make_psk() {
    require_cmd psktool
    PSK_FILE=$T/keys.psk
    psktool -u alice -p "$PSK_FILE" >/dev/null 2>&1 || fail "psktool failed"
    PSK_KEY=$(cut -d: -f2 "$PSK_FILE")
    [[ ${#PSK_KEY} -ge 32 ]] || fail "unexpected psk file: $(cat "$PSK_FILE")"
}
tls_uri_for() { echo "nbds+unix://alice@/?socket=$T/$1.sock&tls-psk-file=$PSK_FILE"; }

# TLS (x509), certificates made here with certtool (ECDSA: fast).
# make_ca DIR: a CA (ca-cert.pem, ca-key.pem).
make_ca() {
    require_cmd certtool
    mkdir -p "$1"
    printf 'cn = nbdcopy test CA %s\nca\ncert_signing_key\nexpiration_days = 2\n' "$1" \
        >"$1/ca.info"
    certtool --generate-privkey --key-type=ecdsa --outfile "$1/ca-key.pem" >/dev/null 2>&1 &&
        certtool --generate-self-signed --load-privkey "$1/ca-key.pem" \
            --template "$1/ca.info" --outfile "$1/ca-cert.pem" >/dev/null 2>&1 ||
        fail "certtool could not make a CA in $1"
}

# _make_cert CA-DIR OUT-DIR PREFIX HOST ROLE: PREFIX-cert.pem, PREFIX-key.pem
# signed by the CA; ROLE is tls_www_server or tls_www_client.
_make_cert() {
    local ca=$1 out=$2 prefix=$3 host=$4 role=$5
    mkdir -p "$out"
    printf 'cn = %s\ndns_name = %s\n%s\nsigning_key\nencryption_key\nexpiration_days = 2\n' \
        "$host" "$host" "$role" >"$out/$prefix.info"
    certtool --generate-privkey --key-type=ecdsa --outfile "$out/$prefix-key.pem" >/dev/null 2>&1 &&
        certtool --generate-certificate --load-ca-certificate "$ca/ca-cert.pem" \
            --load-ca-privkey "$ca/ca-key.pem" --load-privkey "$out/$prefix-key.pem" \
            --template "$out/$prefix.info" --outfile "$out/$prefix-cert.pem" >/dev/null 2>&1 ||
        fail "certtool could not make $out/$prefix-cert.pem"
}

# make_server_pki CA-DIR OUT-DIR HOST: what nbdkit --tls-certificates=OUT-DIR
# reads: ca-cert.pem, server-cert.pem and server-key.pem for HOST.
make_server_pki() {
    mkdir -p "$2"
    cp "$1/ca-cert.pem" "$2/"
    _make_cert "$1" "$2" server "$3" tls_www_server
}

# make_client_pki CA-DIR OUT-DIR [client]: what libnbd's tls-certificates=
# reads: ca-cert.pem, plus client-cert.pem and client-key.pem when asked.
make_client_pki() {
    mkdir -p "$2"
    cp "$1/ca-cert.pem" "$2/"
    [[ ${3:-} == client ]] && _make_cert "$1" "$2" client nbdcopy-client tls_www_client
    return 0
}

# start_nbdkit_tcp NAME [NBDKIT OPTIONS...] PLUGIN [PARAMS...]: like
# start_nbdkit, on 127.0.0.1 and a free port chosen at random (set in
# TCP_PORT), for what only TCP has: a host name a certificate is checked for.
start_nbdkit_tcp() {
    require_cmd nbdkit
    local name=$1; shift
    local pidf=$T/$name.pid attempt pid i
    for ((attempt = 0; attempt < 20; attempt++)); do
        TCP_PORT=$((20000 + RANDOM % 40000))
        rm -f "$pidf"
        nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$TCP_PORT" -P "$pidf" "$@" \
            >"$T/$name.log" 2>&1 &
        pid=$!
        for ((i = 0; i < 300; i++)); do
            [[ -s $pidf ]] && { PIDS+=("$pid"); return 0; }
            _alive "$pid" || break
            nap 0.05
        done
        wait "$pid" 2>/dev/null || true
        grep -qi "address already in use" "$T/$name.log" ||
            { cat "$T/$name.log" >&2; fail "nbdkit $name did not start"; }
    done
    fail "no free TCP port for nbdkit $name after 20 tries"
}

# Secrets.  run_kept LABEL CMD...: runs CMD with its stdout and stderr kept
# in $T/outputs/LABEL.{out,err} (for assert_no_secrets); sets RC and ERR
# (stderr's text).  It never fails by itself.
run_kept() {
    local label=$1; shift
    mkdir -p "$T/outputs"
    RC=0
    "$@" >"$T/outputs/$label.out" 2>"$T/outputs/$label.err" || RC=$?
    ERR=$(<"$T/outputs/$label.err")
    msg "$label: status $RC: $(grep -v -m 3 '^libnbd: debug' "$T/outputs/$label.err")"
}

# assert_no_secrets SECRET...: no kept output contains any SECRET (fixed
# strings, at least 8 characters).  A SECRET that names a PEM file stands
# for each line of its base64 body.
assert_no_secrets() {
    local patterns=$T/secret-patterns secret
    : >"$patterns"
    for secret in "$@"; do
        if [[ -f $secret ]]; then
            sed -n '/^-----BEGIN/,/^-----END/{/^-----/!p}' "$secret" | grep . >>"$patterns" ||
                fail "assert_no_secrets: no PEM body in $secret"
        else
            [[ ${#secret} -ge 8 ]] || fail "assert_no_secrets: '$secret' is too short to look for"
            printf '%s\n' "$secret" >>"$patterns"
        fi
    done
    [[ -s $patterns ]] || fail "assert_no_secrets: nothing to look for"
    local n
    n=$(find "$T/outputs" -type f | wc -l)
    ((n > 0)) || fail "assert_no_secrets: no outputs kept"
    if grep -rlF -f "$patterns" "$T/outputs" >"$T/leaks" 2>/dev/null; then
        fail "secret found in: $(tr '\n' ' ' <"$T/leaks")"
    fi
    msg "no secret in any of $n kept outputs"
}

# expect_one_line_failure: after run_kept, the command failed cleanly with
# one "nbdcopy: " line on stderr.
expect_one_line_failure() {
    [[ $RC -ne 0 ]] || fail "expected a failure, it exited 0"
    [[ $RC -lt 128 ]] || fail "exited with status $RC (crash / signal)"
    [[ $ERR == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $ERR"
    [[ $ERR != *$'\n'* ]] || fail "more than one line on stderr: $ERR"
}

# libnbd_at_least MAJOR.MINOR: whether the libnbd the binary runs on (its
# --version's second line, "libnbd 1.22.2") is that version or newer.
# Where libnbd's own behaviour changed (Debian 12 has 1.14, Debian 13
# 1.22), a test asserts each version's.
libnbd_at_least() {
    if [[ -z ${LIBNBD_VERSION:-} ]]; then
        local line
        while read -r line; do
            [[ $line == "libnbd "* ]] && LIBNBD_VERSION=${line#libnbd } && break
        done < <("$NBDCOPY" --version)
        [[ -n ${LIBNBD_VERSION:-} ]] || fail "no 'libnbd X.Y.Z' line in $NBDCOPY --version"
    fi
    local want_major=${1%%.*} want_minor=${1#*.} major minor
    IFS=. read -r major minor _ <<<"$LIBNBD_VERSION"
    ((major > want_major || (major == want_major && minor >= want_minor)))
}

# require_extended_headers URI: skip unless the server at URI and the
# libnbd we run on negotiate extended headers (64-bit requests and block
# status: qemu >= 8.2 with libnbd >= 1.18, so Debian 13 and not Debian 12).
# nbdinfo's first line says "protocol: newstyle-fixed without TLS, using
# extended packets" then ("structured packets" without them).
require_extended_headers() {
    require_cmd nbdinfo
    local info
    info=$(nbdinfo --no-content "$1") || fail "nbdinfo $1 failed"
    PROTOCOL_LINE=${info%%$'\n'*}
    [[ $PROTOCOL_LINE == *"using extended packets"* ]] ||
        skip "this server and libnbd do not negotiate extended headers (nbdinfo: $PROTOCOL_LINE; they need qemu >= 8.2 and libnbd >= 1.18)"
}

# ---------------------------------------------------------------------------
# Loop devices.
require_root_loop() {
    [[ $(id -u) -eq 0 ]] || skip "needs root for loop devices"
    command -v losetup >/dev/null 2>&1 || skip "losetup not installed"
    [[ -e /dev/loop-control ]] || skip "/dev/loop-control missing"
    losetup -f >/dev/null 2>&1 || skip "losetup -f does not work here"
}

# attach_loop FILE [-r]: sets LOOPDEV.
attach_loop() {
    local file=$1; shift
    LOOPDEV=$(losetup -f --show "$@" "$file" 2>"$T/losetup.err") ||
        skip "losetup failed: $(cat "$T/losetup.err")"
    LOOPS+=("$LOOPDEV")
    [[ -b $LOOPDEV ]] || fail "$LOOPDEV is not a block device"
}

# detach_loop DEV: write the device's cached pages into its backing file,
# then detach.  (losetup -d alone is not enough: when something else, such
# as udev's probe, still holds the device open, the detach and its flush
# happen later, and a cmp of the backing file races them.)
detach_loop() {
    blockdev --flushbufs "$1" || fail "blockdev --flushbufs $1 failed"
    losetup -d "$1" || fail "losetup -d $1 failed"
    local d keep=()
    for d in "${LOOPS[@]}"; do [[ $d == "$1" ]] || keep+=("$d"); done
    LOOPS=("${keep[@]}")
}

# mount_fs TYPE DIR: a new TYPE file system (xfs, btrfs, ...) of 512 MiB
# in a sparse image file, loop-mounted on DIR (unmounted at exit). Returns
# non-zero, after saying why, when this machine cannot (not root, no
# mkfs.TYPE, no kernel support).
mount_fs() {
    local type=$1 dir=$2 image=$T/$1.fs
    if [[ $(id -u) -ne 0 ]]; then msg "no $type: needs root to mount"; return 1; fi
    if ! command -v "mkfs.$type" >/dev/null 2>&1; then msg "no $type: mkfs.$type missing"; return 1; fi
    truncate -s 512M "$image"
    if ! "mkfs.$type" -q "$image" >"$T/mkfs.err" 2>&1; then
        msg "no $type: mkfs.$type failed: $(head -n 1 "$T/mkfs.err")"; return 1
    fi
    mkdir -p "$dir"
    if ! mount -o loop "$image" "$dir" 2>"$T/mount.err"; then
        msg "no $type: mount failed: $(head -n 1 "$T/mount.err")"; return 1
    fi
    MOUNTS+=("$dir")
}

# ---------------------------------------------------------------------------
# Test data.

# write_random PATH OFFSET COUNT: overwrite COUNT random bytes at OFFSET.
# (One dd, no pipe: each process is milliseconds of CPU here.)
write_random() {
    dd if=/dev/urandom of="$1" bs=64K count="$3" seek="$2" \
       iflag=count_bytes,fullblock oflag=seek_bytes conv=notrunc status=none
}

# write_zeroes PATH OFFSET COUNT: explicitly written (allocated) zeroes.
write_zeroes() {
    dd if=/dev/zero of="$1" bs=64K count="$3" seek="$2" \
       iflag=count_bytes,fullblock oflag=seek_bytes conv=notrunc status=none
}

make_random_file() { # PATH SIZE: all random bytes
    head -c "$2" /dev/urandom >"$1"
    [[ $(stat -c %s "$1") -eq $2 ]] || fail "could not create $1"
}

# make_test_file PATH SIZE: a recognisable non-trivial layout.  In every MiB:
# random bytes [0, 393293), a hole, allocated zeroes [524288, 724288), a
# hole; plus random bytes in the last min(1234, SIZE) bytes so the file does
# not end with a hole.
make_test_file() {
    local path=$1 size=$2
    rm -f "$path"
    # One python start (40 ms) instead of two dd a MiB (5 ms each).
    /usr/bin/python3 -S - "$path" "$size" <<'PY' || fail "could not create $path"
import os, sys
path, size, mib = sys.argv[1], int(sys.argv[2]), 1 << 20
with open(path, "wb") as f:
    f.truncate(size)
    for off in range(0, size, mib):
        f.seek(off)
        f.write(os.urandom(min(size - off, 393293)))
        if off + 724288 <= size:
            f.seek(off + 524288)
            f.write(bytes(200000))
    if size > 0:
        n = min(size, 1234)
        f.seek(size - n)
        f.write(os.urandom(n))
PY
    [[ $(stat -c %s "$path") -eq $size ]] || fail "could not create $path"
}

# ---------------------------------------------------------------------------
# Checks.  These read results with tools other than the binary under test.

assert_same_file() { # EXPECTED ACTUAL WHAT
    [[ -f $2 ]] || fail "$3: $2 was not created"
    # (cmp alone when they match: it fails on another size too.)
    cmp -s "$1" "$2" && return 0
    local es as
    es=$(stat -c %s "$1"); as=$(stat -c %s "$2")
    [[ $es -eq $as ]] || fail "$3: size $as, expected $es"
    fail "$3: content differs ($(cmp "$1" "$2" 2>&1 | head -1))"
}

# _show_err FILE N: the first N lines of FILE, each as "    stderr: LINE"
# (no process: run after every command the tests run).
_show_err() {
    local lines line
    mapfile -t -n "$2" lines <"$1"
    for line in "${lines[@]}"; do printf '    stderr: %s\n' "$line" >&2; done
}

# nbd_to_file URI SIZE OUT: read an export back with qemu-img (independent
# of nbdcopy).  qemu rounds export sizes up to 512, so cut back to SIZE.
nbd_to_file() {
    require_cmd qemu-img
    qemu-img convert -f raw -O raw "$1" "$3" 2>"$T/readback.err" ||
        fail "qemu-img could not read back $1: $(cat "$T/readback.err")"
    truncate -s "$2" "$3"
}

assert_nbd_equals_file() { # URI FILE WHAT
    local size
    size=$(stat -c %s "$2")
    nbd_to_file "$1" "$size" "$T/readback.img"
    cmp -s "$2" "$T/readback.img" ||
        fail "$3: export content differs ($(cmp "$2" "$T/readback.img" 2>&1 | head -1))"
    rm -f "$T/readback.img"
}

qcow2_to_file() { # QCOW2 OUT
    qemu-img convert -f qcow2 -O raw "$1" "$2" || fail "qemu-img convert $1 failed"
}

# run_copy ARGS...: run the binary under test, which must succeed.
run_copy() {
    msg "run: nbdcopy $*"
    local rc=0
    "$NBDCOPY" "$@" 2>"$T/cmd.err" || rc=$?
    _show_err "$T/cmd.err" 20
    [[ $rc -eq 0 ]] || fail "nbdcopy $* exited with status $rc"
}

# expect_fail CMD...: CMD must fail cleanly: exit status 1..127 (not killed
# by a signal), stderr is exactly one line starting "nbdcopy: ".  The stderr
# is left in $ERR_FILE and its text in $ERR.
expect_fail() {
    _run_failing "expect failure" 20 "$@"
    [[ $ERR == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $ERR"
    [[ $(wc -l <"$ERR_FILE") -eq 1 ]] ||
        fail "expected exactly one line on stderr, got $(wc -l <"$ERR_FILE")"
}

# _run_failing WHAT SHOWN CMD...: run CMD, which must fail without a signal
# (exit status 1..127), its stdout in $T/cmd.out, its stderr in $ERR_FILE
# (the first SHOWN lines shown) and $ERR.
_run_failing() {
    msg "$1: ${*:3}"
    local shown=$2 rc=0
    shift 2
    ERR_FILE=$T/cmd.err
    "$@" >"$T/cmd.out" 2>"$ERR_FILE" || rc=$?
    ERR=$(<"$ERR_FILE")
    _show_err "$ERR_FILE" "$shown"
    [[ $rc -ne 0 ]] || fail "expected failure, but it exited 0: $*"
    [[ $rc -lt 128 ]] || fail "exited with status $rc (crash / signal): $*"
}

# expect_usage_error CMD...: a command line error (unknown option, missing
# operand...): exit status 1..127, something on stderr mentioning nbdcopy
# (getopt messages and the usage text may take several lines), nothing on
# stdout.
expect_usage_error() {
    _run_failing "expect usage error" 3 "$@"
    grep -q nbdcopy "$ERR_FILE" || fail "stderr does not mention nbdcopy: $ERR"
    [[ ! -s $T/cmd.out ]] || fail "usage error printed on stdout"
}

assert_err_contains() { # TEXT (case-insensitive match against $ERR)
    grep -qiF -- "$1" <<<"$ERR" || fail "error message lacks '$1': $ERR"
}

# assert_err_matches ERE: $ERR matches the extended regular expression
# (case matters), e.g. "^nbdcopy: $(re_quote "$uri"): flush: Input/output error\$".
assert_err_matches() {
    grep -qE -- "$1" <<<"$ERR" || fail "error message does not match /$1/: $ERR"
}

# re_quote TEXT: TEXT with the characters an extended regular expression
# treats specially escaped (for a URI or a path inside assert_err_matches).
re_quote() {
    sed 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$1"
}

assert_unchanged() { # FILE SAVED-COPY WHAT
    cmp -s "$1" "$2" || fail "$3: destination was modified"
}

# verbose_lines ERRFILE: from a -v run's stderr, PLAN_LINE (the
# "nbdcopy: connections=..." plan) and STATS_LINE (the "nbdcopy:
# workers=..." statistics), each empty when missing. One grep: -v also
# carries libnbd's debug lines, hundreds of thousands with 4K requests.
verbose_lines() {
    local line lines=()
    PLAN_LINE="" STATS_LINE=""
    mapfile -t lines < <(grep -E '^nbdcopy: (connections|workers)=' "$1" || true)
    for line in "${lines[@]}"; do
        case $line in
            "nbdcopy: connections="*) PLAN_LINE=$line ;;
            "nbdcopy: workers="*) STATS_LINE=$line ;;
        esac
    done
}

# Sum of the count= fields of nbdkit log filter lines for one request type
# (Write, Zero, Trim, Read, ...).
log_sum() { # LOGFILE TYPE
    local c total=0
    for c in $(grep -E "connection=[0-9]+ $2 id=" "$1" |
               grep -o 'count=0x[0-9a-fA-F]*' | cut -d= -f2); do
        total=$((total + c))
    done
    echo "$total"
}
log_count() { # LOGFILE TYPE
    grep -cE "connection=[0-9]+ $2 id=" "$1" || true
}

# logtool ARGS...: engine-logtool.py, the nbdkit log-filter analyser, run by
# the system interpreter (a python3 on $PATH may be a slow wrapper script).
logtool() {
    local py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    "$py" "$TEST_LIB/engine-logtool.py" "$@"
}

# ---------------------------------------------------------------------------
# Hostile servers (hostile_nbd_server.py): an NBD server that misbehaves on
# demand.  start_hostile NAME FILE [SERVER OPTIONS...], e.g.
#     start_hostile src "$T/src.img" --readonly --fault read-short
start_hostile() {
    local name=$1 file=$2; shift 2
    local sock=$T/$name.sock pidf=$T/$name.pid py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    rm -f "$sock" "$pidf"
    "$py" "$TEST_LIB/hostile_nbd_server.py" --socket "$sock" --pidfile "$pidf" \
        --file "$file" "$@" >"$T/$name.log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    _wait_pidfile "$pidf" "$pid" "hostile server $name" "$name"
}

# bounded_copy ARGS...: runs nbdcopy ARGS under a watchdog of $WATCHDOG
# seconds (default 60), so a hang fails the test instead of stalling it.
# A hang (the watchdog fired) or a signal exit fails at once; otherwise
# RC, ERR and ERR_FILE hold the outcome.
bounded_copy() {
    local watchdog=${WATCHDOG:-60}
    msg "run (watchdog ${watchdog}s): nbdcopy $*"
    RC=0
    ERR_FILE=$T/cmd.err
    timeout -k 5 "$watchdog" "$NBDCOPY" "$@" >"$T/cmd.out" 2>"$ERR_FILE" || RC=$?
    ERR=$(<"$ERR_FILE")
    _show_err "$ERR_FILE" 5
    [[ $RC -ne 124 && $RC -ne 137 ]] || fail "hung: still running after ${watchdog}s: nbdcopy $*"
    [[ $RC -lt 128 ]] || fail "exited with status $RC (crash / signal): nbdcopy $*"
}

# expect_copy_ok ARGS...: the bounded copy succeeds silently.
expect_copy_ok() {
    bounded_copy "$@"
    [[ $RC -eq 0 ]] || fail "exited $RC: nbdcopy $*"
    [[ -z $ERR ]] || fail "succeeded but wrote to stderr: $ERR"
}

# expect_copy_fails TEXT ARGS...: the bounded copy exits 1 with one line
# "nbdcopy: ...", containing TEXT (an extended regular expression).
expect_copy_fails() {
    local want=$1; shift
    bounded_copy "$@"
    [[ $RC -ne 0 ]] || fail "exited 0, expected a failure: nbdcopy $*"
    [[ $RC -eq 1 ]] || fail "exit status $RC, expected 1: nbdcopy $*"
    [[ $ERR == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $ERR"
    [[ $(wc -l <"$ERR_FILE") -eq 1 ]] || fail "expected one line on stderr, got: $ERR"
    grep -qE -- "$want" <<<"$ERR" || fail "the message lacks /$want/: $ERR"
}

# assert_no_wrong_data SOURCE DESTINATION: every 4 KiB block of a
# destination file a failed copy left behind is either the source's block
# or still zeroes (never written): nothing wrong was written.
assert_no_wrong_data() {
    [[ -e $2 ]] || return 0
    assert_no_wrong_data_in "$1" "$2" "$2"
}

# assert_no_wrong_data_in SOURCE WHAT DESTINATION [WHAT DESTINATION]...:
# assert_no_wrong_data for many destinations in one python start, each
# named WHAT in the message. (A MiB at a time: its blocks are looked at
# one by one only where the MiB differs.)
assert_no_wrong_data_in() {
    /usr/bin/python3 -S - "$@" <<'PY' || fail "a failed copy wrote wrong data"
import sys
source = open(sys.argv[1], "rb").read()
zero, status = bytes(4096), 0
kept = sys.argv[2:]
for what, path in zip(kept[0::2], kept[1::2]):
    with open(path, "rb") as f:
        offset = 0
        while data := f.read(1 << 20):
            if data != source[offset:offset + len(data)]:
                for at in range(0, len(data), 4096):
                    b = data[at:at + 4096]
                    a = source[offset + at:offset + at + len(b)]
                    if b != a and b != zero[:len(b)]:
                        print(f"{what}: the block at offset {offset + at} is neither the "
                              "source's nor zeroes", file=sys.stderr)
                        status = 1
                        break
            offset += len(data)
sys.exit(status)
PY
}
