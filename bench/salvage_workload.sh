#!/usr/bin/env bash
# bench/salvage_workload.sh: what --salvage costs (docs/performance.md).
# 1 GiB from nbdkit's pattern plugin into nbdkit memory (--flush), its bad
# areas served by nbdkit's ddrescue filter from a mapfile:
#   none       no bad area: the same copy with and without --salvage (free?)
#   scattered  100 bad sectors at random places (seeded)
#   area64     one bad area of 64 MiB (not aligned to requests)
# both engines, in alternating rounds (bench/rounds.py); the reads made to
# narrow failed requests come from --json (unreadable.reads).
# Usage: bench/salvage_workload.sh   [RUNS=5] [NBDCOPY=build/nbdcopy]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
OURS=${NBDCOPY:-$PWD/build/nbdcopy}
T=$(mktemp -d /var/tmp/nbdsalv.XXXXXX)
trap 'kill $(cat "$T"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$T"' EXIT
cp "$OURS" "$T/ours"
OURS=$T/ours
SIZE=$((1 << 30))

# mapfile NAME "OFFSET LENGTH"...: a ddrescue mapfile, the areas bad.
mapfile_of() {
  local name=$1 pos=0 off len
  shift
  {
    echo "0x0 +"
    while read -r off len; do
      printf '0x%x 0x%x +\n0x%x 0x%x -\n' "$pos" $((off - pos)) "$off" "$len"
      pos=$((off + len))
    done < <(printf '%s\n' "$@" | sort -n)
    printf '0x%x 0x%x +\n' "$pos" $((SIZE - pos))
  } >"$T/$name.map"
}
mapfile -t scattered < <(python3 -c '
import random
r = random.Random(45)
for s in sorted(r.sample(range(1 << 21), 100)): print(s * 512, 512)')
mapfile_of scattered "${scattered[@]}"
mapfile_of area64 "$((300 * 1048576 + 4096)) $((64 * 1048576))"

nbdkit -U "$T/none.sock" -P "$T/none.pid" -r pattern size=1G
for name in scattered area64; do
  nbdkit -U "$T/$name.sock" -P "$T/$name.pid" -r --filter=ddrescue pattern size=1G \
    ddrescue-mapfile="$T/$name.map"
done
nbdkit -U "$T/dst.sock" -P "$T/dst.pid" memory size=1G
sleep 0.5
uri() { echo "nbd+unix:///?socket=$T/$1.sock"; }
DST=$(uri dst)
servers=$(cat "$T"/*.pid | paste -sd,)

python3 bench/rounds.py "$T/none.json" "$RUNS" 1 "$servers" \
  plain "$OURS --flush $(uri none) $DST" \
  salvage "$OURS --salvage --flush $(uri none) $DST"
# (A rescue exits 4.)
python3 bench/rounds.py "$T/bad.json" "$RUNS" 1 "$servers" \
  scattered "$OURS --salvage --flush $(uri scattered) $DST; test \$? -eq 4" \
  scattered-sync "$OURS --salvage --synchronous --flush $(uri scattered) $DST; test \$? -eq 4" \
  area64 "$OURS --salvage --flush $(uri area64) $DST; test \$? -eq 4" \
  area64-sync "$OURS --salvage --synchronous --flush $(uri area64) $DST; test \$? -eq 4"
for name in scattered area64; do
  for engine in "" --synchronous; do
    "$OURS" --salvage $engine --json="$T/$name$engine.report" "$(uri "$name")" "$DST" 2>/dev/null ||
      true
  done
done

python3 - "$T" <<'PY'
import json, statistics, sys
T = sys.argv[1]
def table(path):
    results = json.load(open(path))["results"]
    for name, runs in results.items():
        med = lambda key: statistics.median(r[key] for r in runs)
        print(f"| {name} | {med('wall'):.2f} s | {med('cpu'):.2f} s | {med('server_cpu'):.2f} s |")
print("| copy | wall | nbdcopy CPU | servers' CPU |\n|---|---|---|---|")
table(f"{T}/none.json")
table(f"{T}/bad.json")
print("\n| workload | engine | bad sectors | reads to narrow | reads a bad sector |\n|---|---|---|---|---|")
for name in ("scattered", "area64"):
    for engine in ("", "--synchronous"):
        u = json.load(open(f"{T}/{name}{engine}.report"))["unreadable"]
        sectors = u["bytes"] // 512
        print(f"| {name} | {engine or 'parallel'} | {sectors} | {u['reads']} | "
              f"{u['reads'] / sectors:.2f} |")
PY
