#!/usr/bin/env bash
# bench/server_cost.sh: what a destination server spends under each client's requests.
#
#   bench/server_cost.sh [LABEL=ARGS...]
#
# nbdkit -r pattern 1G (serving all rounds) -> a fresh nbdkit memory 1G per run (stopped
# after the copy), both nbdkit 1.42 in the Debian 13 root (D13ROOT, as bench/generations.sh
# finds it; GEN=12 uses this machine's nbdkit 1.32 instead). In alternating rounds
# (bench/floor_rounds.py --rotate): ours with each set of extra arguments given
# (LABEL=ARGS; default: ours, ours with 256K requests, with 4 connections, with both;
# LABEL=!COMMAND: a whole client command, its source {src}, or {rsrc} as seen inside the
# root, its destination nbd+unix:///?socket={sock} or {rsock}),
# and nbdcopy of the same generation (1.22 by chroot, or /usr/bin/nbdcopy 1.14).
# Prints per command the medians of: wall, copier CPU, the destination's CPU, page faults
# and context switches (voluntary / involuntary), the source's CPU, the floor ((copier +
# servers) CPU / 2) and wall / floor (medians of each run's figure).
# Environment: NEW (build/nbdcopy), RUNS (7), GEN (13), RAW (bench/out/server-cost),
# DST_FILTERS (extra nbdkit options for the destination, e.g. "--filter=stats
# statsfile=/dev/stderr"), SIZE (1G).
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$BENCH")
. "$BENCH/debian13_root.bash"  # D13ROOT
NEW=${NEW:-$TOP/build/nbdcopy}
RUNS=${RUNS:-7}
GEN=${GEN:-13}
SIZE=${SIZE:-1G}
RAW=${RAW:-$BENCH/out/server-cost}
DST_FILTERS=${DST_FILTERS:-}
mkdir -p "$RAW"
IN=$(mktemp -d "$D13ROOT/tmp/nbdcopy-server-cost.XXXXXX")
RIN=/${IN#"$D13ROOT"/}
trap '[ -s "$IN/src.pid" ] && kill "$(cat "$IN/src.pid")"; rm -rf "$IN"' EXIT

C13="chroot $D13ROOT"
# -f: the source stays in this session (see bench/generations.sh).
if [ "$GEN" = 13 ]; then
  $C13 nbdkit -f -U "$RIN/src.sock" -P "$RIN/src.pid" -r pattern "size=$SIZE" &
  DST="$C13 nbdkit -f -U {rsock} $DST_FILTERS memory size=$SIZE"
  REF="nbdcopy-1.22=$C13 nbdcopy --flush nbd+unix:///?socket=$RIN/src.sock nbd+unix:///?socket={rsock}"
else
  nbdkit -f -U "$IN/src.sock" -P "$IN/src.pid" -r pattern "size=$SIZE" &
  DST="nbdkit -f -U {sock} $DST_FILTERS memory size=$SIZE"
  REF="nbdcopy-1.14=/usr/bin/nbdcopy --flush nbd+unix:///?socket=$IN/src.sock nbd+unix:///?socket={sock}"
fi
while [ ! -s "$IN/src.pid" ] || [ ! -S "$IN/src.sock" ]; do sleep 0.05; done
while [ ! -s "$IN/src.pid" ] || [ ! -S "$IN/src.sock" ]; do sleep 0.05; done
SRC="nbd+unix:///?socket=$IN/src.sock"
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] ||
  VARIANTS=("ours=" "ours-256K=--request-size=256K" "ours-C4=-C 4" "ours-C4-256K=-C 4 --request-size=256K")
args=()
for v in "${VARIANTS[@]}"; do
  label=${v%%=*} extra=${v#*=}
  if [[ $extra == !* ]]; then # a whole client command, {src} or {rsrc} (inside the root)
    client=${extra#!} client=${client//\{src\}/$SRC}
    client=${client//\{rsrc\}/nbd+unix:///?socket=$RIN/src.sock}
    args+=("$label" "$DST ::: $client")
  else
    args+=("$label" "$DST ::: $NEW --flush $extra $SRC nbd+unix:///?socket={sock}")
  fi
done
args+=("${REF%%=*}" "$DST ::: ${REF#*=}")
python3 "$BENCH/floor_rounds.py" --rotate --stop-server --root "$D13ROOT" --also "$IN/src.pid" \
  "$RAW/gen$GEN.json" "$RUNS" 1 "" "${args[@]}"
python3 - "$RAW/gen$GEN.json" <<'EOF'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
keys = ["wall", "cpu", "server_cpu", "server_minflt", "server_nvcsw", "server_nivcsw",
        "nvcsw", "nivcsw", "also_cpu", "floor", "wall/floor"]
for samples in res.values():
    for s in samples:  # two cores: half of the CPU that the copy and its servers need
        s["floor"] = (s["cpu"] + s["server_cpu"] + s["also_cpu"]) / 2
        s["wall/floor"] = s["wall"] / s["floor"]
print("| command | " + " | ".join(keys) + " |")
print("|---|" + "---:|" * len(keys))
for name, samples in res.items():
    m = [statistics.median(s.get(k, 0) for s in samples) for k in keys]
    cells = [f"{v:.3f}" if isinstance(v, float) and v < 100 else f"{v:.0f}" for v in m]
    print(f"| {name} | " + " | ".join(cells) + " |")
EOF
