#!/usr/bin/env bash
# Quick-start demo: installs what it needs and builds the nbdcopy binary
# alone (scripts/setup.sh --demo; scripts/test.sh builds the rest), starts
# an nbdkit-generated disk (1 GiB, 10% random data, the rest holes), copies
# it to a local file with a progress bar, and checks the copy byte for byte
# with qemu-img compare.
# Usage: scripts/demo.sh [SIZE]      (default 1G)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
size=${1:-1G}

work=$(mktemp -d)
cleanup() {
  [ -f "$work/nbdkit.pid" ] && kill "$(cat "$work/nbdkit.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

nbdkit -r -U "$work/sock" -P "$work/nbdkit.pid" sparse-random size="$size" percent=10 seed=42
uri="nbd+unix:///?socket=$work/sock"

echo "demo: copying $size from nbdkit sparse-random to $work/disk.img"
build/nbdcopy -p "$uri" "$work/disk.img"
echo "demo: checking every byte with qemu-img compare"
qemu-img compare -q -f raw -F raw "$uri" "$work/disk.img"
echo "demo: OK: $(stat -c %s "$work/disk.img") bytes identical," \
  "$(du -k "$work/disk.img" | cut -f1) KiB allocated (holes stayed holes)"
