#!/usr/bin/env bash
# bench/checkpoint_interval.sh: what one --checkpoint checkpoint costs (a
# flush of the destination and an atomic rewrite of FILE), to settle the
# interval: the same copy with the default interval (5 s / 2 GiB: no
# checkpoint before the end on these sizes) and with one every 0.1 s
# (NBDCOPY_CHECKPOINT_SECONDS), in alternating rounds (bench/rounds.py);
# the cost of one is the difference over the number made (--json).
# Usage: bench/checkpoint_interval.sh   [RUNS=5] [NBDCOPY=build/nbdcopy]
# Destinations: nbdkit memory, a file on tmpfs, a file on the disk (where a
# flush writes the dirty pages back).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
OURS=${NBDCOPY:-$PWD/build/nbdcopy}
T=$(mktemp -d /var/tmp/nbdckpt.XXXXXX)
SHM=$(mktemp -d /dev/shm/nbdckpt.XXXXXX)
trap 'kill $(cat "$T"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$T" "$SHM"' EXIT
cp "$OURS" "$T/ours"
OURS=$T/ours
nbdkit -U "$T/src.sock" -P "$T/src.pid" -r pattern size=1G
nbdkit -U "$T/dst.sock" -P "$T/dst.pid" memory size=1G
python3 bench/mksparse.py "$SHM/real.img" 2048 1 >/dev/null
sleep 0.5
SRC=nbd+unix:///?socket=$T/src.sock DST=nbd+unix:///?socket=$T/dst.sock

pair() { # NAME SRC DST
  local name=$1 src=$2 dst=$3
  python3 bench/rounds.py "$T/$name.json" "$RUNS" 1 - \
    default "rm -f $T/m; $OURS --checkpoint=$T/m $src $dst" \
    every-0.1s "rm -f $T/m; NBDCOPY_CHECKPOINT_SECONDS=0.1 $OURS --checkpoint=$T/m $src $dst"
  rm -f "$T/m"
  NBDCOPY_CHECKPOINT_SECONDS=0.1 "$OURS" --checkpoint="$T/m" --json="$T/$name.count" "$src" "$dst"
}
pair memory "$SRC" "$DST"
pair tmpfs "$SHM/real.img" "$SHM/out.img"
pair disk "$SHM/real.img" "$T/out.img"

python3 - "$T" <<'EOF'
import json, statistics, sys
T = sys.argv[1]
print("| destination | default interval | every 0.1 s | checkpoints | cost of one |")
print("|---|---|---|---|---|")
for name, label in [("memory", "pattern 1 GiB -> nbdkit memory"),
                    ("tmpfs", "realfile 2 GiB -> tmpfs"), ("disk", "realfile 2 GiB -> the disk")]:
    r = json.load(open(f"{T}/{name}.json"))["results"]
    a = statistics.median(x["wall"] for x in r["default"])
    b = statistics.median(x["wall"] for x in r["every-0.1s"])
    n = json.load(open(f"{T}/{name}.count"))["checkpoints"]
    print(f"| {label} | {a:.3f} s | {b:.3f} s | {n} | {(b - a) / max(n - 1, 1) * 1000:.1f} ms |")
EOF
