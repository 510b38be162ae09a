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

# stat_field NAME: sets FIELD to NAME=VALUE of the -v statistics line of
# the last copy (run_copy's $T/cmd.err), or empty.
stat_field() {
  local stats
  stats=$(grep -m1 '^nbdcopy: workers=' "$T/cmd.err") || true
  FIELD=
  [[ $stats =~ \ $1=([0-9]+) ]] && FIELD=${BASH_REMATCH[1]}
  return 0
}

for engine in parallel synchronous; do
  flags=(-v)
  [[ $engine == synchronous ]] && flags+=(--synchronous)
  log=$T/$engine.log
  start_nbdkit src --filter=log -r file "$T/src.img" logfile="$log"
  run_copy "${flags[@]}" "nbd+unix:///?socket=$T/src.sock" "$T/$engine.img"
  stop_server src
  # (The copies are compared with the source at the end, all at once.)
  dst_alloc=$(($(stat -c '%b * %B' "$T/$engine.img")))
  ((dst_alloc <= src_alloc + MiB)) ||
    fail "$engine: destination allocates $dst_alloc bytes, the source $src_alloc: holes lost"
  stat_field unmapped
  unmapped=$FIELD
  [[ -n $unmapped ]] || fail "$engine: no unmapped= in the -v statistics"
  ((unmapped > 0)) || fail "$engine: every range was mapped (unmapped=$unmapped)"
  # One python3 for the log: the Extents bytes, those of them past the
  # dense range (so asked = the bytes of [0, dense) that Extents requests
  # covered, each request counted), and the Read bytes.
  logtool sum "$log" Extents -- outside "$log" Extents "$dense" -- sum "$log" Read \
    >"$T/counts" || fail "$engine: engine-logtool.py failed"
  { read -r extents && read -r past && read -r read; } <"$T/counts" ||
    fail "$engine: engine-logtool.py printed too little"
  asked=$((extents - past))
  ((asked <= dense / 2)) ||
    fail "$engine: extents asked for $asked bytes of the $dense-byte dense range"
  ((read <= dense + 256 * MiB + tail_data + MiB)) ||
    fail "$engine: read $read bytes: the large hole was not found within one stretch"
  ((read >= dense)) || fail "$engine: read only $read bytes"
done

msg "-S 0: no zero detection, so every range is mapped"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/s0.log"
run_copy -v -S 0 "nbd+unix:///?socket=$T/src.sock" "$T/s0.img"
stop_server src
stat_field unmapped
[[ $FIELD == 0 ]] || fail "-S 0: unmapped=$FIELD, expected 0"
asked=$(logtool sum "$T/s0.log" Extents)
((asked >= size)) || fail "-S 0: extents asked for $asked of $size bytes"

# Each copy holds the source's bytes. cmp would read all 640 MiB of both
# files, holes included (2 s of CPU a copy here); this reads only where
# either file has data (SEEK_DATA / SEEK_HOLE): elsewhere both are holes,
# zeroes in both.
python3 - "$T/src.img" "parallel copy" "$T/parallel.img" "synchronous copy" \
  "$T/synchronous.img" "-S 0 copy" "$T/s0.img" <<'PY' || fail "a copy differs from the source"
import os, sys

def data(fd, size):
    """[start, end) of every data segment of the file."""
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: no data at or after pos
            break
        pos = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, pos))
    return out

src = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(src).st_size
src_data = data(src, size)
bad = False
for what, path in zip(sys.argv[2::2], sys.argv[3::2]):
    dst = os.open(path, os.O_RDONLY)
    got = os.fstat(dst).st_size
    if got != size:
        print(f"{what}: size {got}, expected {size}", file=sys.stderr)
        bad = True
        continue
    # The data of either file, runs less than 1 MiB apart read as one.
    runs = []
    for a, b in sorted(src_data + data(dst, size)):
        if runs and a <= runs[-1][1] + (1 << 20):
            runs[-1][1] = max(runs[-1][1], b)
        else:
            runs.append([a, b])
    for a, b in runs:
        while a < b:
            n = min(b - a, 1 << 20)
            x, y = os.pread(src, n, a), os.pread(dst, n, a)
            if x != y:
                i = next(i for i in range(n) if i >= len(y) or x[i] != y[i])
                print(f"{what}: content differs at byte {a + i}", file=sys.stderr)
                bad = True
                break
            a += n
        else:
            continue
        break
    os.close(dst)
sys.exit(bad)
PY
msg PASS
