#!/usr/bin/env bash
# A source whose extents cost more than they save: a dense range of 4 KiB
# data runs and 4 KiB holes (each hole rides along with the data anyway),
# then one large hole, then data. The copy asks for extents in small windows
# only, copies the dense range without asking (zero detection keeps its
# holes), notices the large hole within one unasked stretch (256 MiB), and
# skips it. With -S 0 (no zero detection) every range is asked for.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3

dense=$((80 * MiB)) size=$((640 * MiB)) tail_data=$((4 * MiB))
python3 - "$T/src.img" "$dense" "$size" "$tail_data" <<'PY'
import os, sys
path, dense, size, tail = sys.argv[1], *map(int, sys.argv[2:])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.ftruncate(fd, size)
for offset in range(0, dense, 8192):
    os.pwrite(fd, os.urandom(4096), offset)
os.pwrite(fd, os.urandom(tail), size - tail)
os.close(fd)
PY
src_alloc=$(($(stat -c '%b * %B' "$T/src.img")))

# asked_below LOG END: bytes of [0, END) that Extents requests covered.
asked_below() {
  grep -E "connection=[0-9]+ Extents id=" "$1" |
    sed -E 's/.*offset=(0x[0-9a-fA-F]+) count=(0x[0-9a-fA-F]+).*/\1 \2/' |
    python3 -c 'import sys
end = int(sys.argv[1]); total = 0
for line in sys.stdin:
    offset, count = (int(x, 16) for x in line.split())
    total += max(0, min(offset + count, end) - offset)
print(total)' "$2"
}

# field NAME: NAME=VALUE from the -v statistics line of the last copy.
field() { grep -o "workers=.*" "$T/cmd.err" | grep -o " $1=[0-9]*" | cut -d= -f2 || true; }

for engine in parallel synchronous; do
  flags=(-v)
  [[ $engine == synchronous ]] && flags+=(--synchronous)
  log=$T/$engine.log
  start_nbdkit src --filter=log -r file "$T/src.img" logfile="$log"
  run_copy "${flags[@]}" "$(uri_for src)" "$T/$engine.img"
  stop_server src
  assert_same_file "$T/src.img" "$T/$engine.img" "$engine copy"
  dst_alloc=$(($(stat -c '%b * %B' "$T/$engine.img")))
  ((dst_alloc <= src_alloc + MiB)) ||
    fail "$engine: destination allocates $dst_alloc bytes, the source $src_alloc: holes lost"
  unmapped=$(field unmapped)
  [[ -n $unmapped ]] || fail "$engine: no unmapped= in the -v statistics"
  ((unmapped > 0)) || fail "$engine: every range was mapped (unmapped=$unmapped)"
  asked=$(asked_below "$log" "$dense")
  ((asked <= dense / 2)) ||
    fail "$engine: extents asked for $asked bytes of the $dense-byte dense range"
  read=$(log_sum "$log" Read)
  ((read <= dense + 256 * MiB + tail_data + MiB)) ||
    fail "$engine: read $read bytes: the large hole was not found within one stretch"
  ((read >= dense)) || fail "$engine: read only $read bytes"
done

msg "-S 0: no zero detection, so every range is mapped"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/s0.log"
run_copy -v -S 0 "$(uri_for src)" "$T/s0.img"
stop_server src
assert_same_file "$T/src.img" "$T/s0.img" "-S 0 copy"
[[ $(field unmapped) == 0 ]] || fail "-S 0: unmapped=$(field unmapped), expected 0"
asked=$(log_sum "$T/s0.log" Extents)
((asked >= size)) || fail "-S 0: extents asked for $asked of $size bytes"
msg PASS
