#!/usr/bin/env bash
# bench/long_copies.sh: what --checkpoint, --retry and --rate cost, and a
# regression check of the plain copies against an earlier build and
# /usr/bin/nbdcopy, in alternating rounds (bench/rounds.py), next to each
# workload's floor. Prints a markdown report (docs/performance.md keeps it).
#
# Usage: bench/long_copies.sh                 full sizes (about 15 minutes here)
#        QUICK=1 bench/long_copies.sh         small sizes, a smoke test
#        ROWS="reconnect reconnect-qemu" bench/long_copies.sh   only those rows
#        PREV=/path/to/old/nbdcopy bench/long_copies.sh   compare with an earlier build too
# Environment: NBDCOPY (ours, default build/nbdcopy), PREV, RUNS (default 7),
# QUICK, SHM (tmpfs for file destinations, default /dev/shm).
#
# Workloads (servers on unix sockets unless said; file destinations on tmpfs):
#   pattern     nbdkit -r pattern 1G -> nbdkit memory 1G (--flush)
#   sparse      nbdkit -r sparse-random 8G percent=10 seed=1 -> nbdkit memory 8G (--flush)
#   realfile    a 2 GiB file, 768 MiB of data in runs (bench/mksparse.py) -> new file
#   latency     nbdkit -r --filter=delay pattern 512M delay-read=10ms -> nbdkit memory (--flush)
#   resume      realfile, killed (SIGKILL) at half its time and run again, vs one run
#   reconnect   latency over TCP through bench's drop proxy, one drop per 100 MiB,
#               --retry=3, vs the same proxy without drops
#   reconnect-qemu  a 1 GiB file of random bytes (tmpfs) served by qemu-nbd over TCP
#               (raw, multi-conn) through the proxy, one drop per 100 MiB, the
#               4 connections (-T 4), --retry=3, into a file on tmpfs, vs the
#               same proxy without drops
#   rate        pattern with --rate=200M: the rate measured
#   ranges      a 4 GiB qcow2 (10 % data) through qemu-nbd, 1 % changed in 2,000
#               scattered ranges: --ranges (the bitmap's nbdinfo map) against
#               --dirty-bitmap and a full copy
# Floors: dd bs=1M of the source into the same file system (realfile); for the
# NBD workloads, the two-core CPU bound: (our CPU + the servers' CPU) / 2.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=${QUICK:-0}
RUNS=${RUNS:-$([ "$QUICK" = 1 ] && echo 3 || echo 7)}
OURS=${NBDCOPY:-$ROOT/build/nbdcopy}
PREV=${PREV:-}
REF=/usr/bin/nbdcopy
if [ "$QUICK" = 1 ]; then
  P=64 S=512 R=128 L=32 Q=256
else
  P=1024 S=8192 R=2048 L=512 Q=1024
fi
ROWS=${ROWS:-pattern rate sparse realfile latency resume reconnect reconnect-qemu ranges}
want() { [[ " $ROWS " == *" $1 "* ]]; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

T=$(mktemp -d /tmp/nbdlong.XXXXXX)
SHM=$(mktemp -d "${SHM:-/dev/shm}/nbdlong.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$T" "$SHM"
}
trap cleanup EXIT
# Measure copies, so that a rebuild meanwhile cannot mix two binaries.
cp "$OURS" "$T/ours"
OURS=$T/ours
[ -n "$PREV" ] && cp "$PREV" "$T/prev" && PREV=$T/prev

nbdkit_unix() { # NAME ARGS...: an nbdkit on $T/NAME.sock, pid in $T/NAME.pid
  local name=$1
  shift
  nbdkit -U "$T/$name.sock" -P "$T/$name.pid" "$@"
  for _ in $(seq 100); do [ -s "$T/$name.pid" ] && break; sleep 0.05; done
  PIDS+=("$(cat "$T/$name.pid")")
}
uri() { echo "nbd+unix:///?socket=$T/$1.sock"; }
pid_of() { cat "$T/$1.pid"; }

rounds() { # OUT PIDS NAME CMD ...
  local out=$1 pids=$2
  shift 2
  python3 bench/rounds.py "$T/$out.json" "$RUNS" 1 "$pids" "$@"
}

# One workload: ours, ours --checkpoint, and (when given) the previous build
# and /usr/bin/nbdcopy, all with the same operands.
copy_rounds() { # NAME PIDS SRC DST EXTRA
  local name=$1 pids=$2 src=$3 dst=$4 extra=$5 map=$T/$1.map
  local cmds=(ours "$OURS $extra $src $dst"
    checkpoint "rm -f $map; $OURS $extra --checkpoint=$map $src $dst"
    nbdcopy "$REF $extra $src $dst")
  [ -n "$PREV" ] && cmds+=(previous "$PREV $extra $src $dst")
  rounds "$name" "$pids" "${cmds[@]}"
}

if want pattern || want rate; then
  nbdkit_unix pattern -r pattern size=${P}M
  nbdkit_unix pattern-dst memory size=${P}M
fi
if want pattern; then
  echo "bench: pattern" >&2
  copy_rounds pattern "$(pid_of pattern),$(pid_of pattern-dst)" "$(uri pattern)" "$(uri pattern-dst)" --flush
fi
if want rate; then
  echo "bench: rate" >&2
  rounds rate "$(pid_of pattern),$(pid_of pattern-dst)" \
    rate "$OURS --flush --rate=200M $(uri pattern) $(uri pattern-dst)"
fi

if want sparse; then
  echo "bench: sparse" >&2
  nbdkit_unix sparse -r sparse-random size=${S}M percent=10 seed=1
  nbdkit_unix sparse-dst memory size=${S}M
  copy_rounds sparse "$(pid_of sparse),$(pid_of sparse-dst)" "$(uri sparse)" "$(uri sparse-dst)" --flush
fi

if want realfile || want resume; then
  python3 bench/mksparse.py "$SHM/real.img" "$R" 1
fi
if want realfile; then
  echo "bench: realfile" >&2
  copy_rounds realfile - "$SHM/real.img" "$SHM/real-out.img" ""
  rounds realfile-floor - dd "dd if=$SHM/real.img of=$SHM/real-dd.img bs=1M status=none"
fi

if want latency || want reconnect; then
  nbdkit_unix latency -r --filter=delay pattern size=${L}M delay-read=10ms
  nbdkit_unix latency-dst memory size=${L}M
fi
if want latency; then
  echo "bench: latency" >&2
  LAT_PIDS="$(pid_of latency),$(pid_of latency-dst)"
  copy_rounds latency "$LAT_PIDS" "$(uri latency)" "$(uri latency-dst)" --flush
fi

if want resume; then
echo "bench: resume" >&2
# realfile, so that no server sees its client killed: nbdkit 1.32 can abort
# (raw_send_socket: Assertion `sock >= 0') when a client dies with several
# requests in flight.
RSRC=$SHM/real.img RDST=$SHM/resume.img
# A checkpoint every 0.1 s (in both commands), so that one exists at half of
# this short copy, as one would at half of a long one.
export NBDCOPY_CHECKPOINT_SECONDS=0.1
python3 bench/rounds.py "$T/resume-probe.json" 3 1 - once \
  "rm -f $T/r.map; $OURS --checkpoint=$T/r.map $RSRC $RDST"
HALF=$(python3 -c "import json,statistics as s;d=json.load(open('$T/resume-probe.json'));print(round(s.median(r['wall'] for r in d['results']['once'])/2,3))")
rounds resume - \
  once "rm -f $T/r.map; $OURS --checkpoint=$T/r.map $RSRC $RDST" \
  killed+resumed "rm -f $T/r.map; timeout -s KILL $HALF $OURS --checkpoint=$T/r.map $RSRC $RDST || true; $OURS --checkpoint=$T/r.map $RSRC $RDST"

unset NBDCOPY_CHECKPOINT_SECONDS
fi

proxy() { # NAME PORT ARGS...: bench's drop proxy in front of 127.0.0.1:PORT
  python3 tests/integration/lib/drop_proxy.py --listen-port-file "$T/$1.port" \
    --target "127.0.0.1:$2" --lifetime 3600 --log "$T/$1.log" "${@:3}" &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$T/$1.port" ] && break; sleep 0.05; done
}

DROPS=0
if want reconnect; then
echo "bench: reconnect" >&2
port=$(free_port)
nbdkit -i 127.0.0.1 -p "$port" -P "$T/tcp.pid" -r --filter=delay pattern size=${L}M delay-read=10ms
for _ in $(seq 100); do [ -s "$T/tcp.pid" ] && break; sleep 0.05; done
PIDS+=("$(cat "$T/tcp.pid")")
proxy calm "$port"
proxy drops "$port" --drop-every 100M --mode close
TCP_PIDS="$(cat "$T/tcp.pid"),$(pid_of latency-dst),${PIDS[-1]},${PIDS[-2]}"
rounds reconnect "$TCP_PIDS" \
  no-drops "$OURS --flush --retry=3 nbd://127.0.0.1:$(cat "$T/calm.port") $(uri latency-dst)" \
  drops "$OURS --flush --retry=3 nbd://127.0.0.1:$(cat "$T/drops.port") $(uri latency-dst)"
DROPS=$(grep -c '^drop ' "$T/drops.log" || true)
fi

QDROPS=0
if want reconnect-qemu; then
  echo "bench: reconnect-qemu" >&2
  head -c $((Q * 1024 * 1024)) /dev/urandom >"$SHM/q-src.img"
  qport=$(free_port)
  qemu-nbd -t -r -f raw --shared=0 -b 127.0.0.1 -p "$qport" --pid-file="$T/qemu.pid" "$SHM/q-src.img" &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$T/qemu.pid" ] && break; sleep 0.05; done
  proxy qcalm "$qport"
  proxy qdrops "$qport" --drop-every 100M --mode close
  rounds reconnect-qemu "$(cat "$T/qemu.pid"),${PIDS[-1]},${PIDS[-2]}" \
    no-drops "$OURS -T 4 --retry=3 nbd://127.0.0.1:$(cat "$T/qcalm.port") $SHM/q-out.img" \
    drops "$OURS -T 4 --retry=3 nbd://127.0.0.1:$(cat "$T/qdrops.port") $SHM/q-out.img"
  cmp "$SHM/q-src.img" "$SHM/q-out.img" || { echo "bench: reconnect-qemu: the copy differs" >&2; exit 1; }
  QDROPS=$(grep -c '^drop ' "$T/qdrops.log" || true)
fi

if want ranges; then
echo "bench: ranges" >&2
# 1 % of a 4 GiB image (10 % data) changed in 2,000 scattered 20 KiB writes,
# tracked by qemu bitmap b0; --ranges gets the bitmap's own map.
I=$([ "$QUICK" = 1 ] && echo 256 || echo 4096)
nbdkit_unix inc-src -r sparse-random size=${I}M percent=10 seed=1
qemu-img convert -f raw -O qcow2 "$(uri inc-src)" "$T/inc.qcow2"
qemu-img convert -f qcow2 -O raw "$T/inc.qcow2" "$SHM/inc.img"
qemu-img bitmap --add --enable "$T/inc.qcow2" b0
python3 - "$I" >"$T/inc-writes.txt" <<'PY'
import random, sys
mib = int(sys.argv[1])
rng = random.Random(1)
for i, start in enumerate(sorted(rng.sample(range(mib * 1024 // 20 - 1), 2000))):
    print(f"write -P {1 + i % 255} {start * 20480} 20k")
PY
args=()
while read -r line; do args+=(-c "$line"); done <"$T/inc-writes.txt"
qemu-io -f qcow2 "${args[@]}" "$T/inc.qcow2" >/dev/null
nbdinfo --map=qemu:dirty-bitmap:b0 --json -- [ qemu-nbd -r -B b0 -f qcow2 "$T/inc.qcow2" ] >"$T/inc-map.json"
rounds ranges - \
  dirty-bitmap "$OURS --dirty-bitmap=b0 -- [ qemu-nbd -r -B b0 -f qcow2 $T/inc.qcow2 ] $SHM/inc.img" \
  ranges "$OURS --ranges=$T/inc-map.json --ranges-type=1 -- [ qemu-nbd -r -f qcow2 $T/inc.qcow2 ] $SHM/inc.img" \
  full "rm -f $SHM/full.img; $OURS -- [ qemu-nbd -r -f qcow2 $T/inc.qcow2 ] $SHM/full.img"
cmp "$SHM/full.img" "$SHM/inc.img" || { echo "bench: the incremental copies differ from the full one" >&2; exit 1; }
fi

python3 - "$T" "$RUNS" "$DROPS" "$P" "$QDROPS" "$Q" <<'EOF'
import json, os, statistics, sys
T, runs, drops, pattern_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
qdrops, qemu_mib = int(sys.argv[5]), int(sys.argv[6])
def have(name):
    return os.path.exists(f"{T}/{name}.json")
def load(name):
    return json.load(open(f"{T}/{name}.json"))["results"]
def med(rows, key="wall"):
    return statistics.median(r[key] for r in rows)
def ratio(a, b):
    return statistics.median(x["wall"] / y["wall"] for x, y in zip(a, b))
print(f"Medians of {runs} alternating rounds (wall s; CPU s of ours; the servers' CPU s); "
      "ratios are medians of the round-by-round ratios.\n")
print("| workload | ours | --checkpoint | ratio | nbdcopy | ours / nbdcopy | previous | ours / previous | floor |")
print("|---|---|---|---|---|---|---|---|---|")
floor_dd = med(load("realfile-floor")["dd"]) if have("realfile-floor") else None
for w in [w for w in ["pattern", "sparse", "realfile", "latency"] if have(w)]:
    r = load(w)
    o, c, n = r["ours"], r["checkpoint"], r["nbdcopy"]
    p = r.get("previous")
    if w == "realfile":
        floor = f"dd {floor_dd:.3f}"
    else:
        floor = f"CPU/2 {statistics.median((x['cpu'] + x['server_cpu']) / 2 for x in o):.3f}"
    prev = f"{med(p):.3f} | {ratio(o, p):.2f}" if p else "- | -"
    print(f"| {w} | {med(o):.3f} ({med(o,'cpu'):.2f} / {med(o,'server_cpu'):.2f}) | "
          f"{med(c):.3f} | {ratio(c, o):.3f} | {med(n):.3f} | {ratio(o, n):.2f} | {prev} | {floor} |")
print()
r = load("resume") if have("resume") else None
if r: print(f"resume (realfile, SIGKILL at half, then the rerun): {med(r['killed+resumed']):.3f} s "
      f"against {med(r['once']):.3f} s for one run: {ratio(r['killed+resumed'], r['once']):.3f}x")
r = load("reconnect") if have("reconnect") else None
if r: print(f"reconnect (latency over TCP through the proxy, {drops} drops in all rounds, one per 100 MiB): "
      f"{med(r['drops']):.3f} s against {med(r['no-drops']):.3f} s without drops: "
      f"{ratio(r['drops'], r['no-drops']):.3f}x")
r = load("reconnect-qemu") if have("reconnect-qemu") else None
if r: print(f"reconnect-qemu ({qemu_mib} MiB of random bytes, qemu-nbd over TCP through the proxy, "
            f"4 connections, {qdrops} drops in all rounds, one per 100 MiB): {med(r['drops']):.3f} s "
            f"(CPU {med(r['drops'], 'cpu'):.2f} / servers {med(r['drops'], 'server_cpu'):.2f}) against "
            f"{med(r['no-drops']):.3f} s (CPU {med(r['no-drops'], 'cpu'):.2f} / servers "
            f"{med(r['no-drops'], 'server_cpu'):.2f}) without drops: {ratio(r['drops'], r['no-drops']):.3f}x")
r = load("rate")["rate"] if have("rate") else None
if r: rate = pattern_mib / med(r)
if r: print(f"--rate=200M on pattern: {med(r):.3f} s for {pattern_mib} MiB = {rate:.1f} MiB/s "
      f"({(rate / 200 - 1) * 100:+.1f} %)")
r = load("ranges") if have("ranges") else None
if r: print(f"ranges (2,000 scattered ranges, 1 % of the image, through qemu-nbd into tmpfs): "
      f"--ranges {med(r['ranges']):.3f} s, --dirty-bitmap {med(r['dirty-bitmap']):.3f} s "
      f"({ratio(r['ranges'], r['dirty-bitmap']):.3f}x), a full copy {med(r['full']):.3f} s "
      f"({ratio(r['ranges'], r['full']):.3f}x)")
EOF
