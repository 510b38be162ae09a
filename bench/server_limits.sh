#!/usr/bin/env bash
# bench/server_limits.sh: two limits that the servers set and no client can move
# (docs/performance.md, "What the servers themselves bound").
#
#   bench/server_limits.sh [dst] [sndbuf] [parallel]
#
# dst     the destination alone: a 1 GiB file on $SHM (nbdkit pattern's bytes) and nbdkit
#         pattern 1G, each into a fresh nbdkit memory 1G (--flush / qemu-img -n -W). nbdkit
#         memory takes one lock for a whole write (lookup, calloc of its 32 KiB pages and the
#         memcpy into them), so its first touch of the image runs on one core at a time:
#         when wall is close to the destination's own CPU for every client, the
#         destination sets the wall.
# sndbuf  net.core.wmem_default at the kernel's 208 KiB and at 4 MiB (root; restored on
#         exit). A server's replies cross its own socket's send buffer, which a server
#         started without a setting of its own gets from wmem_default; on a Unix stream
#         socket the receiver's SO_RCVBUF bounds nothing, so no client can enlarge it.
#         pattern 1G -> null: and -> a fresh nbdkit memory, each client at both settings
#         in the same rounds.
# parallel  the same copy into a destination that takes writes in parallel and whose
#         memory is touched already: nbdkit memory allocator=malloc (writes under a read
#         lock), serving all rounds like the source (its CPU while each command runs is
#         counted as the source's is; dst and w/dst stay empty). What the clients do when
#         the destination does not serialize them.
#
# Every command of a set runs in the same alternating rounds (bench/floor_rounds.py
# --rotate); Debian 12's servers and peers (/usr/bin/nbdcopy, qemu-img) beside ours.
# Prints each set's table (bench/report_limits.py): per command the medians of wall, copier
# CPU, destination CPU (dst), the CPU of the servers that serve all rounds (src), the floor,
# wall / floor and wall / dst, and the first command's wall over this one's.
# Environment: NEW (build/nbdcopy), RUNS (6), RAW (bench/out/server-limits), SHM (/dev/shm).
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$BENCH")
NEW=${NEW:-$TOP/build/nbdcopy}
RUNS=${RUNS:-6}
RAW=${RAW:-$BENCH/out/server-limits}
SHM=${SHM:-/dev/shm}
WMEM=/proc/sys/net/core/wmem_default
die() { echo "server_limits: $*" >&2; exit 1; }
[ -x "$NEW" ] || die "no build at $NEW"
mkdir -p "$RAW"
T=$(mktemp -d)
old_wmem=$(cat "$WMEM")
cleanup() {
  [ "$(cat "$WMEM")" = "$old_wmem" ] || echo "$old_wmem" >"$WMEM" || true
  local pidf
  for pidf in "$T/src.pid" "$T/par.pid"; do
    if [ -s "$pidf" ]; then kill "$(cat "$pidf")" 2>/dev/null || true; fi
  done
  rm -rf "$T" "$SHM/server-limits.img"
}
trap cleanup EXIT

start_source() { # a fresh nbdkit -r pattern 1G on $T/src.sock
  [ -s "$T/src.pid" ] && kill "$(cat "$T/src.pid")" && sleep 0.3
  rm -f "$T/src.pid" "$T/src.sock"
  nbdkit -U "$T/src.sock" -P "$T/src.pid" -r pattern size=1G
  while [ ! -S "$T/src.sock" ]; do sleep 0.05; done
}
SRC="nbd+unix:///?socket=$T/src.sock"
MEM="nbdkit -f -U {sock} memory size=1G :::"
DST="nbd+unix:///?socket={sock}"
rounds() { # OUT NAME CMD ... (ALSO: more pid files of servers that serve all rounds)
  local out=$1 also=(--also "$T/src.pid") pidf; shift
  for pidf in ${ALSO:-}; do also+=(--also "$pidf"); done
  python3 "$BENCH/floor_rounds.py" --rotate "${also[@]}" --stop-server "$out" "$RUNS" 1 "" "$@"
  python3 "$BENCH/report_limits.py" "$out"
}

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(dst sndbuf parallel)
for set in "${sets[@]}"; do
  case $set in
  dst)
    start_source
    "$NEW" "$SRC" "$SHM/server-limits.img"
    echo "=== dst: a file on $SHM, and nbdkit pattern, into a fresh nbdkit memory ==="
    rounds "$RAW/dst.json" \
      ours-file "$MEM $NEW --flush $SHM/server-limits.img $DST" \
      nbdcopy-file "$MEM /usr/bin/nbdcopy --flush $SHM/server-limits.img $DST" \
      qemu-img-file "$MEM qemu-img convert -n -W -f raw -O raw $SHM/server-limits.img $DST" \
      ours-nbd "$MEM $NEW --flush $SRC $DST" \
      nbdcopy-nbd "$MEM /usr/bin/nbdcopy --flush $SRC $DST"
    ;;
  sndbuf)
    [ -w "$WMEM" ] || die "sndbuf: needs root ($WMEM)"
    # The server's end of a Unix stream connection is made when the client connects, with
    # the wmem_default of that moment: each command sets it just before its client starts,
    # so both settings run in the same alternating rounds.
    start_source
    at() { echo "echo $1 >$WMEM && exec"; }
    echo "=== sndbuf: wmem_default 208 KiB and 4 MiB, pattern -> null: ==="
    rounds "$RAW/sndbuf-null.json" \
      ours-208K "$(at 212992) $NEW $SRC null:" \
      ours-4M "$(at 4194304) $NEW $SRC null:" \
      nbdcopy-208K "$(at 212992) /usr/bin/nbdcopy $SRC null:" \
      nbdcopy-4M "$(at 4194304) /usr/bin/nbdcopy $SRC null:"
    echo "=== sndbuf: wmem_default 208 KiB and 4 MiB, pattern -> a fresh nbdkit memory ==="
    rounds "$RAW/sndbuf-memory.json" \
      ours-208K "$MEM $(at 212992) $NEW --flush $SRC $DST" \
      ours-4M "$MEM $(at 4194304) $NEW --flush $SRC $DST" \
      nbdcopy-208K "$MEM $(at 212992) /usr/bin/nbdcopy --flush $SRC $DST" \
      nbdcopy-4M "$MEM $(at 4194304) /usr/bin/nbdcopy --flush $SRC $DST" \
      qemu-img-208K "$MEM $(at 212992) qemu-img convert -n -W -f raw -O raw $SRC $DST" \
      qemu-img-4M "$MEM $(at 4194304) qemu-img convert -n -W -f raw -O raw $SRC $DST"
    echo "$old_wmem" >"$WMEM"
    ;;
  parallel)
    start_source
    nbdkit -U "$T/par.sock" -P "$T/par.pid" memory size=1G allocator=malloc
    while [ ! -S "$T/par.sock" ]; do sleep 0.05; done
    PAR="nbd+unix:///?socket=$T/par.sock"
    "$NEW" "$SRC" "$PAR" # every page of it touched once, before the rounds
    echo "=== parallel: nbdkit pattern -> nbdkit memory allocator=malloc (serving all rounds) ==="
    ALSO=$T/par.pid rounds "$RAW/parallel.json" \
      ours "$NEW --flush $SRC $PAR" \
      nbdcopy "/usr/bin/nbdcopy --flush $SRC $PAR" \
      qemu-img "qemu-img convert -n -W -f raw -O raw $SRC $PAR"
    kill "$(cat "$T/par.pid")" && rm -f "$T/par.pid"
    ;;
  *) die "unknown set $set (dst, sndbuf, parallel)" ;;
  esac
done
