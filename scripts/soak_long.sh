#!/usr/bin/env bash
# Long-copy soak (issue 21): randomized copies with --checkpoint=FILE and
# --retry=N that are SIGKILLed at random moments, have their connections
# dropped at random (source and destination, drop_proxy.py between nbdcopy
# and the servers), and whose servers are killed and restarted on the same
# port, the destination losing what it had not flushed (nbdkit's file
# plugin behind --filter=cache cache=writeback).  Each copy is run again
# with the same command (same --checkpoint FILE, same --retry) until one
# run finishes, at most 15 runs and 4 minutes; a finished copy must equal
# the source byte for byte (cmp of the destination server's file: only
# what was flushed to it counts).
#
# A copy draws its whole plan from its own seed before it starts:
#   transport  both servers on TCP (127.0.0.1), a Unix socket, or TLS-PSK
#              over either (servers_lib.bash: tcp, unix, tls, tls-unix);
#   source     nbdkit file plugin over a raw image, qemu-nbd -f raw,
#              qemu-nbd -f qcow2 (the same bytes converted), or nbd-server
#              (not over TLS: it has no PSK), all read-only; 4 MiB to
#              -m MiB of random data, holes and allocated zeroes (some
#              sizes not a multiple of 4K: nbdkit);
#   destination nbdkit file plugin behind --filter=cache cache=writeback
#              over a file that starts sparse or full of garbage;
#   nbdcopy    engine default / -C 1 / --synchronous, --request-size 64K to
#              2M, --retry 3..10 (1..2 for the planned outages), --rate set
#              so that a run lasts 0.5..3 s, sometimes --verify or
#              --allocated, NBDCOPY_CHECKPOINT_SECONDS 0.2..5;
#   faults     0..3 SIGKILLs of nbdcopy (one each in the first runs, at a
#              random moment: half of them a random time after the run's
#              first checkpoint, so that the next run resumes from done
#              ranges); a drop proxy in front of either server or
#              both (close, reset or silence with --timeout=2; --drop-every
#              or --drop-after 1..8 MiB, or, in 40 % of the proxies, the
#              handshake rule: --drop-after 0..3000 bytes from the proxy's
#              1st..3rd connection on, so that a connection is cut while
#              it negotiates, the run's first, a helper or a reconnection;
#              1..3 drops; refusing new connections for 0..1 s after a
#              drop, by closing or by not listening); 0..2 restarts of the
#              destination server and
#              0..1 of the source (SIGKILL, down 0..2 s, started again on
#              the same port), each a random time after the run's first
#              progress; and in some copies one outage longer than the
#              retries last (the run must fail with one line, the next one
#              resumes).
# Every run is watched: servers (and proxies) that die without being
# killed by us are counted as server crashes, named, and started again.
#
# Outcomes, one per copy (the first that applies):
#   crash       a run died of a signal other than our SIGKILL, or printed a
#               sanitizer report
#   hang        a run was still going after the 60 s watchdog (a gdb
#               backtrace is kept)
#   corrupt     a run exited 0 but the destination differs from the source
#   mute        a run failed without exactly one line "nbdcopy: ..." and
#               exit status 1, or a finished run printed anything
#   needless    a run failed although every fault it met was within what
#               --retry=N promises: no server crash, no planned outage, and
#               on each side the reconnection attempts the faults could
#               need, even if they all hit one connection in a row, at most
#               N (a drop: 1; a drop followed by a refusal window or a
#               restart down for D seconds: 1 + the attempts made at
#               0, 1, 3, 7 ... s that fall inside D + 1 s)
#   server-crash a server (or proxy) died on its own during the copy
#               (nbdkit 1.32.5 aborts in raw_send_socket at times); not
#               ours, reported with the server's name
#   gave-up     no run finished within 15 runs and 4 minutes
#   correct     a run finished and the destination equals the source
# Runs that failed because of a planned outage or a server crash are
# expected and only counted, and so is one more kind, a rule of --retry
# (docs/reliability.md): under TLS, a FIN in the middle of the run's first
# TLS handshake reads as a server that lacks our key and fails at once
# ("the server hung up during the handshake ... (or the connection was cut
# just then)"), counted as tls-fin-failures.
#
# Usage: scripts/soak_long.sh [-n COPIES] [-s SEED] [-m MAX_MIB] [-d MAX_MS] [-K] [-o RESULTS.tsv]
#        scripts/soak_long.sh -c COPY_SEED[,...] [-m MAX_MIB] [-d MAX_MS] [-K] ...   (replay)
#   -n copies (20), -s seed (1), -m the largest source in MiB (16), -d the
#   longest a run takes without faults, in ms (3000: --rate is set from
#   it; kills and restarts land within it), -K every kill a time from
#   the run's start (none after its first checkpoint: the plans of this
#   script before commit e9dbc36, which the 500-copy run of
#   docs/reliability.md used).
#   NBDCOPY=path (default build/nbdcopy); SOAK_WATCHDOG=SECONDS (60).
#   The markdown table goes to stdout, one TSV line per copy to
#   RESULTS.tsv (default soak-long-results.tsv), the logs of every copy
#   that was not correct to RESULTS.failures/.  Copy i of seed S has the
#   seed S*10000+i: its TSV line ends with the command that replays it
#   (-c SEED -m MAX_MIB -d MAX_MS [-K]; timing makes a replay similar, not
#   identical).  Exit status 0 when every copy was correct or a server
#   crash, 1 otherwise.
# Reproduce docs/reliability.md:
#   nice -n 10 scripts/soak_long.sh -n 500 -s 21 -K -o soak-long.tsv
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

seed=1 copies=20 max_mib=16 max_ms=3000 results=soak-long-results.tsv replay=() kill_after_checkpoint=1
while getopts "n:s:m:d:o:c:K" opt; do
    case $opt in
        K) kill_after_checkpoint=0 ;;
        d) max_ms=$OPTARG ;;
        n) copies=$OPTARG ;;
        s) seed=$OPTARG ;;
        m) max_mib=$OPTARG ;;
        o) results=$OPTARG ;;
        c) IFS=, read -r -a replay <<<"$OPTARG" ;;
        *) echo "usage: $0 [-n COPIES] [-s SEED] [-m MAX_MIB] [-d MAX_MS] [-K] [-o RESULTS.tsv] [-c COPY_SEED,...]" >&2
           exit 2 ;;
    esac
done
replay_k=""
((kill_after_checkpoint)) || replay_k=" -K"
((max_mib >= 4 && max_ms >= 300)) || { echo "$0: -m must be 4 or more, -d 300 or more" >&2; exit 2; }
[[ $results == /* ]] || results=$repo/$results
export NBDCOPY=${NBDCOPY:-$repo/build/nbdcopy}
[[ $NBDCOPY == /* ]] || NBDCOPY=$repo/$NBDCOPY
source "$repo/tests/integration/lib/lib.sh"
TEST_NAME=soak-long
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/servers_lib.bash"
require_cmd nbdkit qemu-nbd nbd-server qemu-img python3 cmp psktool
make_psk
py=$(_proxy_python)
# The proxy as it is now: a long soak is not disturbed by edits to it.
mkdir "$T/lib"
cp "$TEST_LIB/drop_proxy.py" "$T/lib/"
TEST_LIB=$T/lib

# A command that fails the soak itself says where (set -e alone is silent).
set -o errtrace
trap 'echo "[soak-long] error: line $LINENO: $BASH_COMMAND (status $?)" >&2' ERR
MAX_RUNS=15 MAX_SECONDS=240 WATCHDOG=${SOAK_WATCHDOG:-60}
# A sleep without a fork (the watch loop runs 20 times a second).
exec {sleep_fd}<> <(:)
nap() { read -r -t "$1" -u "$sleep_fd" _ || true; }
# tick: NOW = the time in ms.
tick() { local t=${EPOCHREALTIME/./}; NOW=$((t / 1000)); }
# Alive and not a zombie, without a fork.
alive() {
    local stat
    [[ -n $1 ]] || return 1
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

# pick VAR WORDS...: VAR = one of the words at random (no $(...): a
# subshell's $RANDOM is reseeded, so the seed would not fix the plan).
pick() {
    local var=$1
    shift
    local words=("$@")
    printf -v "$var" '%s' "${words[RANDOM % ${#words[@]}]}"
}
chance() { ((RANDOM % 100 < $1)); }

# make_image SEED SIZE OUT: random data, holes and allocated zeroes in runs
# of 4K to 2M (sometimes odd lengths), the same bytes for the same seed.
make_image() {
    "$py" - "$@" <<'PY'
import random, sys
seed, size, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = random.Random(seed)
with open(out, "wb") as f:
    f.truncate(size)
    off = 0
    while off < size:
        n = r.choice((4096, 65536, 262144, 1 << 20, 2 << 20)) * r.randint(1, 4) // 4
        if r.random() < 0.1:
            n += r.randint(1, 4095)
        n = min(n, size - off)
        kind = r.random()
        if kind < 0.55:
            f.seek(off)
            f.write(r.randbytes(n))
        elif kind < 0.7:
            f.seek(off)
            f.write(bytes(n))
        off += n
    f.seek(size - 1)          # never end with a hole: the size is exact
    f.write(b"\x01")
PY
}

# attempts_needed SECONDS: how many reconnection attempts (made at 0, 1,
# 3, 7, 15 ... s, each wait capped at 60 s) a server unreachable for
# SECONDS (a decimal) may take: 1 + those that fall inside SECONDS + 1 s.
attempts_needed() {
    "$py" -c '
import sys
down = float(sys.argv[1]) + 1.0
t, wait, n = 0.0, 1.0, 1
while t <= down:
    n += 1
    t += wait
    wait = min(wait * 2, 60)
print(n if float(sys.argv[1]) > 0 else 1)' "$1"
}

# ---------------------------------------------------------------------------
# Servers: servers_lib.bash (start_server, kill_server, restart_server on
# the same port or socket path; a copy's URIs never change: they are part
# of the checkpoint's identity).  Proxies have a pid file too.
pid_of() { cat "$T/$1.pid" 2>/dev/null || true; }

# ---------------------------------------------------------------------------
# One copy.

declare -A plan=()
# draw_plan COPY_SEED: the whole plan, from the seed alone.
draw_plan() {
    RANDOM=$1
    plan=()
    local mib src engine rs target cps where
    mib=$((4 + RANDOM % (max_mib - 3)))
    pick src nbdkit qemu-raw qemu-qcow2
    plan[src]=$src
    plan[size]=$((mib * MiB))
    if [[ $src == nbdkit ]] && chance 25; then
        plan[size]=$((plan[size] + 1 + RANDOM % 65535))
    fi
    plan[image_seed]=$RANDOM
    plan[garbage]=0
    chance 40 && plan[garbage]=1
    plan[src_threads]=""
    chance 50 && plan[src_threads]="-t 1"
    plan[dst_threads]=""
    chance 50 && plan[dst_threads]="-t 1"

    local opts=()
    pick engine default default -C1 sync
    plan[engine]=$engine
    case $engine in
        -C1) opts+=(-C 1) ;;
        sync) opts+=(--synchronous) ;;
    esac
    pick rs 64K 128K 256K 512K 1M 2M
    opts+=(--request-size="$rs")
    # The ms a run takes without faults: 1/6 to all of -d.
    pick target $((max_ms / 6)) $((max_ms / 3)) $((max_ms / 2)) $((max_ms * 2 / 3)) "$max_ms"
    plan[run_ms]=$target
    opts+=(--rate=$(((plan[size] * 1000 / target + 1023) / 1024))K)
    chance 10 && opts+=(--verify)
    chance 10 && opts+=(--allocated)
    pick cps 0.2 0.3 0.5 1 5
    plan[checkpoint_seconds]=$cps

    # Outage: one restart longer than the retries last.
    plan[outage]=none
    local retry
    if chance 15; then
        pick retry 1 2
        pick where dst dst src
        plan[outage]=$where
    else
        pick retry 3 4 5 6 8 10
    fi
    plan[retry]=$retry

    # Proxies.
    local side mode rule x drops refuse rmode
    plan[silence]=0
    for side in src dst; do
        plan[${side}_proxy]=""
        chance 55 || continue
        pick mode close close reset reset silence
        pick rule --drop-every --drop-after
        pick x 1M 2M 4M 8M
        pick drops 1 1 2 3
        pick refuse 0 0 0 0.3 1
        pick rmode close unlisten
        [[ $mode == silence ]] && plan[silence]=1
        [[ $mode == silence ]] && drops=1
        plan[${side}_proxy]="--mode $mode $rule $x --drops $drops --refuse-after-drop $refuse --refuse-mode $rmode"
        plan[${side}_refuse]=$refuse
        plan[${side}_mode]=$mode
        plan[${side}_rest]="--drops $drops --refuse-after-drop $refuse --refuse-mode $rmode"
    done
    ((plan[silence])) && opts+=(--timeout=2)

    # Kills: the i-th in run i, kill_ms after the start (or, below, after
    # its first checkpoint).
    local k i
    pick k 0 0 1 1 2 3
    plan[kills]=""
    for ((i = 0; i < k; i++)); do
        plan[kills]+="$((50 + RANDOM % (target * 3 / 2))) "
    done

    # Restarts: "SIDE:DELAY_MS:DOWN[:outage]" each, DELAY after the run's
    # first progress or after the restart before it in the same run.
    local r down
    plan[restarts]=""
    pick r 0 0 1 1 2
    for ((i = 0; i < r; i++)); do
        pick down 0 0.2 0.5 1 2
        plan[restarts]+="dst:$((RANDOM % target)):$down "
    done
    if chance 20; then
        pick down 0 0.2 0.5 1
        plan[restarts]+="src:$((RANDOM % target)):$down "
    fi
    if [[ ${plan[outage]} != none ]]; then
        # Longer than the attempts at 0 (and 1 s) take, by 1.5 s.
        down=$((retry == 1 ? 2 : 3))
        plan[restarts]+="${plan[outage]}:$((RANDOM % target)):$down.5:outage "
    fi
    plan[opts]="${opts[*]}"

    # Half the kills land DELAY ms after the run's first checkpoint
    # ("cDELAY"; never, if it makes none), so that the next run resumes
    # from done ranges.  (Drawn after the rest: the draws above are those
    # of the plans before this was added.)
    if ((kill_after_checkpoint)); then
        local with_done=() kill
        for kill in ${plan[kills]}; do
            if chance 50; then kill=c$((RANDOM % (target / 2 + 1))); fi
            with_done+=("$kill")
        done
        plan[kills]="${with_done[*]}${with_done[*]:+ }"
    fi
    draw_transport_and_handshake
}

# draw_transport_and_handshake: drawn last (the draws before it are those
# of the plans before it was added).  The transport of both servers: TCP,
# a Unix socket, TLS-PSK over either; nbd-server (no PSK) as the source
# of some copies that are not TLS; and drops while a connection
# negotiates: a proxy's rule becomes --drop-after 0 to 3000 bytes (the NBD
# handshake is some 300 bytes, a TLS one some 3000) from the proxy's
# FIRST-th connection on (1 to 3: the run's first connection, or a helper
# connection, or a reconnection's).
draw_transport_and_handshake() {
    local transport side hs fc mode
    pick transport tcp tcp unix tls tls-unix
    plan[transport]=$transport
    if [[ $transport != tls* && ${plan[src]} == nbdkit ]] && ((plan[size] % 4096 == 0)) && chance 30; then
        plan[src]=nbd-server
        plan[src_threads]=""
    fi
    for side in src dst; do
        plan[${side}_handshake]=0
        [[ -n ${plan[${side}_proxy]} ]] || continue
        mode=${plan[${side}_mode]}
        # (A Unix socket has no RST: the proxy refuses reset there.)
        [[ $transport == *unix && $mode == reset ]] && mode=close
        plan[${side}_mode]=$mode
        if chance 40; then
            pick hs 0 18 40 60 120 300 1000 3000
            pick fc 1 1 2 3
            plan[${side}_proxy]="--mode $mode --drop-after $hs --first-conn $fc ${plan[${side}_rest]}"
            plan[${side}_handshake]=1
        else
            plan[${side}_proxy]=${plan[${side}_proxy]/--mode reset/--mode $mode}
        fi
    done
}

# TSV and table bookkeeping.
outcomes=(correct corrupt hang crash mute needless gave-up server-crash)
declare -A count=() by_src=()
for o in "${outcomes[@]}"; do count[$o]=0; done
totals_kills=0 totals_src_drops=0 totals_dst_drops=0 totals_restarts=0 totals_outages=0
totals_runs=0 totals_expected=0 totals_reconnections=0 totals_resumed=0 totals_handshake_drops=0 totals_tls_fin=0
crashed_servers=()

# A run's side events, for the promise: attempts the faults may need.
declare -A need=()
run_excused=0

note_restart() { # SIDE DOWN_SECONDS OUTAGE
    local n
    n=$(attempts_needed "$2")
    need[$1]=$((${need[$1]:-0} + n))
    [[ $3 == outage ]] && run_excused=1
    return 0
}

# check_servers: any server or proxy that died without us is a server
# crash: named, counted, started again (a proxy cannot be: its port would
# change, so the rest of the copy is excused).
check_servers() {
    local name pid
    for name in src dst spx dpx; do
        [[ -e $T/$name.kind ]] || continue
        pid=$(pid_of "$name")
        [[ -n $pid ]] || continue
        alive "$pid" && continue
        local what why rc=0
        { wait "$pid"; } 2>/dev/null || rc=$?
        _forget_pid "$pid"
        rm -f "$T/$name.pid"
        what=$(cat "$T/$name.kind")
        why=$(grep -aE 'Assertion|Segmentation|Traceback|Error' "$T/$name.log" | tail -n 1 | cut -c1-200 || true)
        if ((rc > 128)); then
            why="signal $((rc - 128))${why:+: $why}"
        elif ((rc > 0 && rc != 127)); then
            why="exit status $rc${why:+: $why}"
        fi
        copy_crashes+=("$name($what): ${why:-no message}")
        crashed_servers+=("$name($what)")
        server_died=1
        copy_excused=1
        msg "copy $copy_seed: $name ($what) died on its own: ${why:-no message}"
        if [[ $what != proxy ]]; then
            restart_server "$name"
        fi
    done
}

# run_once N: one nbdcopy run under watch; sets RUN_STATUS and RUN_CLASS
# (finished, killed, failed, hang, crash, mute).
run_once() {
    local n=$1
    local kill_ms=${kills[n - 1]:-} pid t0 progress_at=0 restart="" status=0 after_checkpoint=0
    if [[ $kill_ms == c* ]]; then after_checkpoint=1 kill_ms=${kill_ms#c}; fi
    : >"$C/run$n.start"  # FILE newer than this: the run made a checkpoint
    local err=$C/run$n.err out=$C/run$n.out prog=$C/run$n.progress json=$C/run$n.json
    local hung=0 killed=0 loops=0
    # Made here, not by the background job's redirections: a kill drawn a
    # few ms after the start can land, on a loaded machine, before the
    # forked shell has opened them (or exec'd nbdcopy), and the run is
    # then a killed run with nothing to say, not a missing file.
    : >"$err"
    : >"$out"
    : >"$prog"
    if ((${#restarts[@]} > 0)); then restart=${restarts[0]}; fi
    need=() run_excused=0 server_died=0 RUN_REFUSING=0 RUN_TLS_FIN=0
    local since=0 spx0=0 dpx0=0
    [[ -f $T/spx.log ]] && spx0=$(grep -c '^drop ' "$T/spx.log" || true)
    [[ -f $T/dpx.log ]] && dpx0=$(grep -c '^drop ' "$T/dpx.log" || true)

    NBDCOPY_CHECKPOINT_SECONDS=${plan[checkpoint_seconds]} \
        "$NBDCOPY" "${copy_opts[@]}" --json="$json" --progress=3 "$src_uri" "$dst_uri" \
        >"$out" 2>"$err" 3>"$prog" &
    pid=$!
    tick
    t0=$NOW
    while alive "$pid"; do
        tick
        if ((after_checkpoint)) && [[ $C/copy.map -nt $C/run$n.start ]]; then
            after_checkpoint=0 t0=$NOW
        fi
        if [[ -n $kill_ms ]] && ((!after_checkpoint && NOW - t0 >= kill_ms)); then
            kill -9 "$pid" 2>/dev/null || true
            killed=1
            copy_kills=$((copy_kills + 1))
            break
        fi
        if ((progress_at == 0)) && [[ -s $prog ]]; then progress_at=$NOW since=$NOW; fi
        if [[ -n $restart ]] && ((progress_at > 0)); then
            local side delay down kind t1
            IFS=: read -r side delay down kind <<<"$restart"
            if ((NOW - since >= delay)); then
                restarts=("${restarts[@]:1}")
                restart=${restarts[0]:-}
                if [[ -s $T/$side.pid ]]; then kill_server "$side"; fi
                tick
                t1=$NOW
                nap "$down"
                restart_server "$side"
                tick
                local dt
                dt=$(printf '%d.%03d' $(((NOW - t1) / 1000)) $(((NOW - t1) % 1000)))
                copy_events+="restart-$side:${dt}s${kind:+(outage)} "
                copy_restarts=$((copy_restarts + 1))
                [[ $kind == outage ]] && copy_outages=$((copy_outages + 1))
                note_restart "$side" "$dt" "${kind:-}"
                since=$NOW
            fi
        fi
        loops=$((loops + 1))
        ((loops % 10)) || check_servers
        if ((NOW - t0 > WATCHDOG * 1000)); then
            hung=1
            timeout 30 gdb -p "$pid" -batch -ex 'thread apply all bt' >"$C/run$n.backtrace" 2>&1 || true
            kill -9 "$pid" 2>/dev/null || true
            break
        fi
        nap 0.05
    done
    { wait "$pid"; } 2>/dev/null || status=$?  # (no "Killed" line from bash)
    RUN_STATUS=$status
    nap 0.1
    check_servers

    # What the proxies did in this run.
    local side refuse drops n0 log a
    for side in src dst; do
        log=$T/${side:0:1}px.log
        [[ -f $log ]] || continue
        drops=$(grep -c '^drop ' "$log" || true)
        n0=$spx0
        [[ $side == dst ]] && n0=$dpx0
        drops=$((drops - n0))
        ((drops > 0)) || continue
        [[ ${plan[${side}_refuse]:-0} == 0 ]] || RUN_REFUSING=1
        [[ ${plan[transport]} == tls* && ${plan[${side}_mode]} == close ]] && RUN_TLS_FIN=1
        ((plan[${side}_handshake] == 0)) || copy_handshake_drops=$((copy_handshake_drops + drops))
        [[ $side == src ]] && copy_src_drops=$((copy_src_drops + drops))
        [[ $side == dst ]] && copy_dst_drops=$((copy_dst_drops + drops))
        refuse=${plan[${side}_refuse]:-0}
        a=1
        [[ $refuse != 0 ]] && a=$(attempts_needed "$refuse")
        need[$side]=$((${need[$side]:-0} + drops * a))
    done

    local lines=0
    lines=$(wc -l <"$err")
    if ((hung)) && [[ $status -eq 137 ]]; then
        RUN_CLASS=hang
    elif ((killed)) && [[ $status -eq 137 ]]; then
        RUN_CLASS=killed
    elif ((status >= 128)) || grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$err"; then
        RUN_CLASS=crash
    elif ((status == 0)); then
        RUN_CLASS=finished
        ((lines == 0)) || RUN_CLASS=mute
    elif ((status == 1 && lines == 1)) && grep -qE '^nbdcopy: .{8,}' "$err"; then
        RUN_CLASS=failed
    else
        RUN_CLASS=mute
    fi
    if [[ -s $json ]]; then
        a=$(grep -o '"reconnections":[0-9]*' "$json" | cut -d: -f2 || true)
        copy_reconnections=$((copy_reconnections + ${a:-0}))
        a=$(grep -o '"bytes_already_done":[0-9]*' "$json" | cut -d: -f2 || true)
        ((${a:-0} == 0)) || copy_resumed=$((copy_resumed + 1))
    fi
}

# copy SEED INDEX: one copy, start to end; prints its TSV line.
copy_one() {
    copy_seed=$1
    local index=$2
    draw_plan "$copy_seed"
    C=$T/copy
    rm -rf "$C"
    mkdir -p "$C"
    local size=${plan[size]}
    make_image "${plan[image_seed]}" "$size" "$C/src.raw"
    if ((plan[garbage])); then
        head -c "$size" /dev/urandom >"$C/dst.img"
    else
        truncate -s "$size" "$C/dst.img"
    fi

    # Servers, then proxies.
    rm -f "$T"/{src,dst,spx,dpx}.{kind,log,server,conf,sock,port}
    local transport=${plan[transport]} threads src_kind=${plan[src]} src_file=$C/src.raw
    case $src_kind in
        qemu-qcow2)
            qemu-img convert -f raw -O qcow2 "$C/src.raw" "$C/src.qcow2"
            src_file=$C/src.qcow2 ;;
    esac
    threads=1
    [[ ${plan[src_threads]} == "-t 1" ]] || threads=default
    start_server src "$src_kind" "$transport" "$src_file" ro "$threads"
    echo "$src_kind" >"$T/src.kind"
    threads=1
    [[ ${plan[dst_threads]} == "-t 1" ]] || threads=default
    start_server dst nbdkit-writeback "$transport" "$C/dst.img" rw "$threads"
    echo nbdkit >"$T/dst.kind"
    local popts=()
    src_uri=$(server_uri src)
    dst_uri=$(server_uri dst)
    if [[ -n ${plan[src_proxy]} ]]; then
        read -r -a popts <<<"${plan[src_proxy]}"
        start_proxy_for spx src --lifetime 900 "${popts[@]}"
        echo proxy >"$T/spx.kind"
        src_uri=$PROXY_URI
    fi
    if [[ -n ${plan[dst_proxy]} ]]; then
        read -r -a popts <<<"${plan[dst_proxy]}"
        start_proxy_for dpx dst --lifetime 900 "${popts[@]}"
        echo proxy >"$T/dpx.kind"
        dst_uri=$PROXY_URI
    fi

    read -r -a copy_opts <<<"${plan[opts]}"
    copy_opts+=(--checkpoint="$C/copy.map" --retry="${plan[retry]}")
    read -r -a kills <<<"${plan[kills]}"
    read -r -a restarts <<<"${plan[restarts]}"
    copy_kills=0 copy_src_drops=0 copy_dst_drops=0 copy_restarts=0 copy_outages=0
    copy_reconnections=0 copy_excused=0 copy_events="" copy_crashes=() copy_resumed=0
    copy_handshake_drops=0 copy_tls_fin=0
    local outcome="" statuses="" message="" run=0 start=$SECONDS expected=0 failures=""
    local -A seen=()
    while :; do
        run=$((run + 1))
        # A refusal window of a proxy that dropped in the last run must be
        # over (a run's first connection is not retried).
        if ((run > 1)); then
            if ((RUN_REFUSING)); then nap 1.2; fi
            check_servers
        fi
        run_once "$run"
        statuses+="${statuses:+,}$RUN_STATUS"
        local r=$RUN_CLASS
        if [[ $r == failed ]]; then
            # Expected: a server died, or the retries ran out ("could not
            # be re-established") after more than they promise to carry.
            local beyond=0 side line
            line=$(head -c 300 "$C/run$run.err" | tr '\n\t' '  ')
            for side in src dst; do
                ((${need[$side]:-0} <= plan[retry])) || beyond=1
            done
            ((run_excused)) && beyond=1
            # A FIN in the middle of a TLS handshake reads as a server that
            # lacks our key (docs/reliability.md): the run's first
            # connection fails at once, saying both.
            local tls_fin=0
            ((RUN_TLS_FIN)) && [[ $line == *"the server hung up during the handshake"* ]] && tls_fin=1
            ((tls_fin)) && copy_tls_fin=$((copy_tls_fin + 1))
            if ((server_died || tls_fin)) ||
                { ((beyond)) && [[ $line == *"could not be re-established"* ]]; }; then
                expected=$((expected + 1))
                failures+="run $run (expected): $line; "
            else
                r=needless
                failures+="run $run (needless; attempts needed at most src ${need[src]:-0} dst ${need[dst]:-0}): $line; "
            fi
        fi
        case $r in
            finished)
                if cmp -s "$C/src.raw" "$C/dst.img"; then
                    seen[correct]=1
                else
                    seen[corrupt]=1
                    message="run $run: $(cmp "$C/src.raw" "$C/dst.img" 2>&1 | head -n 1 || true)"
                fi
                break ;;
            killed | failed) ;;
            *)
                seen[$r]=1
                [[ -n $message ]] || message="run $run: $r (status $RUN_STATUS): $(head -c 300 "$C/run$run.err" | tr '\n\t' '  ')" ;;
        esac
        if ((run >= MAX_RUNS || SECONDS - start >= MAX_SECONDS)); then
            seen[gave-up]=1
            break
        fi
    done
    for o in crash hang corrupt mute needless; do
        if [[ -n ${seen[$o]:-} ]]; then outcome=$o; break; fi
    done
    if [[ -z $outcome ]]; then
        if ((copy_excused)); then
            outcome=server-crash
        elif [[ -n ${seen[gave-up]:-} ]]; then
            outcome=gave-up
        else
            outcome=correct
        fi
    fi
    if [[ -z $message && $outcome != correct && -s $C/run$run.err ]]; then
        message="last run: $(head -c 300 "$C/run$run.err" | tr '\n\t' '  ')"
    fi
    local end=gave-up
    [[ -n ${seen[correct]:-} ]] && end=finished-identical
    [[ -n ${seen[corrupt]:-} ]] && end=finished-different
    ((${#copy_crashes[@]} == 0)) || message+="${message:+; }died: ${copy_crashes[*]}"

    # Stop this copy's servers and proxies.
    local name
    for name in spx dpx src dst; do stop_server "$name"; done
    rm -f "$T"/{src,dst,spx,dpx}.kind

    local faults="kills=${plan[kills]// /,} restarts=${plan[restarts]// /,}"
    faults+=" transport=${plan[transport]} src-proxy=[${plan[src_proxy]}] dst-proxy=[${plan[dst_proxy]}]"
    faults+=" retry=${plan[retry]} outage=${plan[outage]} checkpoint-seconds=${plan[checkpoint_seconds]}"
    local events="kills=$copy_kills src-drops=$copy_src_drops dst-drops=$copy_dst_drops"
    events+=" handshake-rule-drops=$copy_handshake_drops"
    events+=" ${copy_events}reconnections=$copy_reconnections resumed-runs=$copy_resumed"
    events+=" expected-failures=$expected tls-fin-failures=$copy_tls_fin end=$end"
    local source="${plan[src]}${plan[src_threads]:+ ${plan[src_threads]}} size=$size"
    ((plan[garbage] == 0)) || source+=" dst-garbage"
    source+=" dst=nbdkit${plan[dst_threads]:+ ${plan[dst_threads]}}"
    if [[ $outcome != correct ]]; then
        local kept=${results%.tsv}.failures/copy-$copy_seed
        mkdir -p "$kept"
        cp "$C"/run*.err "$C"/run*.json "$C"/run*.backtrace "$C/copy.map" "$T"/{src,dst,spx,dpx}.log \
            "$kept/" 2>/dev/null || true
        msg "copy $index (seed $copy_seed): $outcome: $message"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$index" "$copy_seed" "$outcome" \
        "$run" "$((SECONDS - start))" "$source" "${plan[opts]} --retry=${plan[retry]}" \
        "$faults" "$events" "$statuses" "$message" "$failures" \
        "scripts/soak_long.sh -c $copy_seed -m $max_mib -d $max_ms$replay_k" >>"$results"
    COPY_OUTCOME=$outcome
    totals_runs=$((totals_runs + run))
    totals_kills=$((totals_kills + copy_kills))
    totals_src_drops=$((totals_src_drops + copy_src_drops))
    totals_dst_drops=$((totals_dst_drops + copy_dst_drops))
    totals_restarts=$((totals_restarts + copy_restarts))
    totals_outages=$((totals_outages + copy_outages))
    totals_expected=$((totals_expected + expected))
    totals_reconnections=$((totals_reconnections + copy_reconnections))
    totals_resumed=$((totals_resumed + copy_resumed))
    totals_handshake_drops=$((totals_handshake_drops + copy_handshake_drops))
    totals_tls_fin=$((totals_tls_fin + copy_tls_fin))
}

# Everything below is one function, read whole before it runs: the script
# can be edited while a soak runs.
main() {
    printf 'copy\tseed\toutcome\truns\tseconds\tsource\toptions\tfaults\tevents\tstatuses\tmessage\tfailed_runs\treplay\n' >"$results"
    seeds=()
    if ((${#replay[@]} > 0)); then
        seeds=("${replay[@]}")
    else
        for ((i = 1; i <= copies; i++)); do seeds+=($((seed * 10000 + i))); done
    fi
    wall=$SECONDS
    i=0
    for s in "${seeds[@]}"; do
        i=$((i + 1))
        copy_one "$s" "$i"
        count[$COPY_OUTCOME]=$((count[$COPY_OUTCOME] + 1))
        by_src["${plan[src]} $COPY_OUTCOME"]=$((${by_src["${plan[src]} $COPY_OUTCOME"]:-0} + 1))
        by_src["${plan[engine]} $COPY_OUTCOME"]=$((${by_src["${plan[engine]} $COPY_OUTCOME"]:-0} + 1))
        by_src["${plan[transport]} $COPY_OUTCOME"]=$((${by_src["${plan[transport]} $COPY_OUTCOME"]:-0} + 1))
        msg "copy $i/${#seeds[@]} (seed $s): $COPY_OUTCOME, $((SECONDS - wall)) s"
    done
    wall=$((SECONDS - wall))

    echo "| source, engine | copies | correct | corrupt | hang | crash | mute | needless | gave-up | server-crash |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local src total cells n o what bad
    for src in nbdkit qemu-raw qemu-qcow2 nbd-server default -C1 sync tcp unix tls tls-unix; do
        total=0 cells=""
        for o in "${outcomes[@]}"; do
            n=${by_src["$src $o"]:-0}
            total=$((total + n))
            cells+=" | $n"
        done
        case $src in
            tcp | unix | tls | tls-unix) src="transport: $src" ;;
            default) src="engine: default (multi-conn)" ;;
            -C1) src="engine: -C 1" ;;
            sync) src="engine: --synchronous" ;;
        esac
        echo "| $src | $total$cells |"
    done
    cells=""
    for o in "${outcomes[@]}"; do cells+=" | **${count[$o]}**"; done
    echo "| **all** | **$i**$cells |"
    echo
    echo "Runs: $totals_runs; SIGKILLs: $totals_kills; drops: $totals_src_drops source, $totals_dst_drops destination"
    echo "($totals_handshake_drops of them by the handshake rule: --drop-after 0 to 3000 bytes);"
    echo "server restarts: $totals_restarts ($totals_outages longer than the retries); reconnections (--json of the runs that ended): $totals_reconnections;"
    echo "runs that ended (not killed) after resuming from done ranges: $totals_resumed;"
    echo "failed runs that were expected (an outage, a server crash, more than --retry could carry,"
    echo "a FIN in the first connection's TLS handshake): $totals_expected ($totals_tls_fin of them the TLS FIN)."
    if ((${#crashed_servers[@]} > 0)); then
        echo "Servers that died on their own: $(printf '%s\n' "${crashed_servers[@]}" | sort | uniq -c | awk '{printf "%s%s x%s", (NR>1?", ":""), $2, $1}')."
    fi
    what="Seed $seed"
    ((${#replay[@]} == 0)) || what="Copy seeds ${replay[*]}"
    echo "$what, $i copies in $wall s; per-copy results in $results"
    echo "nbdcopy: $NBDCOPY, $(binary_info)"
    bad=0
    for o in corrupt hang crash mute needless gave-up; do bad=$((bad + count[$o])); done
    if ((bad > 0)); then exit 1; fi
}

# binary_info: when the binary under test was built, and the newest commit
# of the sources older than it (the commit it was most likely built from).
binary_info() {
    local built commit
    built=$(stat -c %Y "$NBDCOPY")
    commit=$(git -C "$repo" log -1 --first-parent --format='%h %cI' --before="@$built" \
        -- src include CMakeLists.txt cmake 2>/dev/null) || true
    echo "built $(date -u -d "@$built" '+%Y-%m-%d %H:%M:%S UTC'); newest source commit before that: ${commit:-unknown}"
}

main "$@"; exit $?
