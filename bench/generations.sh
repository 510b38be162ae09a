#!/usr/bin/env bash
# bench/generations.sh: ours against both generations of peers, side by side, each copy
# against its floor.
#
#   bench/generations.sh [WORKLOAD...]
#
# Generation 12 is this machine (Debian 12): /usr/bin/nbdcopy (libnbd 1.14), qemu-img 7.2,
# nbdkit 1.32 and qemu-nbd 7.2 as servers. Generation 13 is a Debian 13 root ($D13ROOT):
# nbdcopy 1.22 and qemu-img 10 run there by chroot, and its nbdkit 1.42 and qemu-nbd 10 serve
# every copy of the generation, ours included (ours runs outside, on the root's sockets:
# a unix socket is a path, reached from outside as $D13ROOT/PATH). Labels: ours@12,
# nbdcopy-1.14, qemu-img-7.2, ours@13, nbdcopy-1.22, qemu-img-10; with BASE=/path/to/nbdcopy
# (an older build of ours, e.g. bench/ab.sh's bench/out/ab/<sha>/build/nbdcopy), base@12 and
# base@13 join the same rounds.
#
# Every command of a workload runs in the same alternating rounds (bench/floor_rounds.py
# --rotate), so ratios are medians of pairs of runs next to each other. An NBD destination
# is a fresh nbdkit memory server for every run (SERVER ::: CLIENT, stopped after the
# copy): its CPU is known apart; the sources serve all rounds and their CPU while each
# command runs is measured (--also). floor = max(a qemu-nbd's main thread, (copier +
# servers) CPU / 2): on two cores no copy is faster than half the CPU that it and its
# servers need (bench/report_generations.py).
#
# Workloads:
#   pattern    nbdkit -r pattern 1G -> fresh nbdkit memory 1G, --flush (qemu-img -n -W)
#   sparse     nbdkit -r sparse-random 8G percent=10 seed=1 -> fresh nbdkit memory 8G
#   readnull   nbdkit -r pattern 1G -> null: (no qemu-img equivalent)
#   latency    nbdkit -r --filter=delay pattern 512M delay-read=10ms -> fresh memory 512M
#   fsimage    ext4 image (mke2fs -d /usr/share, 2G) -> new file on $SHM
#   qcow2      the image as qcow2 through [ qemu-nbd -r -f qcow2 ] -> new file on $SHM; also
#              split@GEN (the same qemu-nbd on a socket: its CPU and its main thread's apart)
#              and qemu-img convert reading the qcow2 in-process
#   disk       nbdkit -r pattern 1G -> [ qemu-nbd -f raw --cache=none --aio=native FILE ],
#              FILE preallocated on the disk ($DISKDIR); qemu-img -n -t none straight into
#              FILE; nbd-floor@GEN: qemu-img through the same qemu-nbd on a socket (the
#              best an NBD client gets from it)
#
# Environment: D13ROOT (the Debian 13 root: scripts/debian13.sh's cache,
# /var/cache/nbdcopy/debian13, while it is mounted, else /var/tmp/d13dev), NEW (build/nbdcopy), BASE, RUNS (7), WARMUP (1), RAW
# (bench/out/generations), SESSION_NICE (below), SHM (/dev/shm, which must be the root's /dev/shm too), DISKDIR
# (in the root's /var/tmp, on the disk), FSIMAGE (bench/out/ab/fs-_usr_share-2G.raw, built
# once as bench/ab.sh builds it). Then bench/report_generations.py RAW prints the tables
# (RAW/generations.md); `bench/report_generations.py RAW bench/generations.md` makes them the
# section that bench/report.py puts into docs/performance.md.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$BENCH")
. "$BENCH/debian13_root.bash"  # D13ROOT
NEW=${NEW:-$TOP/build/nbdcopy}
BASE=${BASE:-}
RUNS=${RUNS:-7}
WARMUP=${WARMUP:-1}
RAW=${RAW:-$BENCH/out/generations}
SHM=${SHM:-/dev/shm}
DISKDIR=${DISKDIR:-$D13ROOT/var/tmp/nbdcopy-generations}
FSIMAGE=${FSIMAGE:-$BENCH/out/ab/fs-_usr_share-2G.raw}
WORKLOADS=("${@:-pattern sparse readnull latency fsimage qcow2 disk}")
read -r -a WORKLOADS <<<"${WORKLOADS[*]}"

die() { echo "generations: $*" >&2; exit 1; }
[ -x "$D13ROOT/usr/bin/nbdcopy" ] || die "no Debian 13 root with nbdcopy at $D13ROOT (D13ROOT)"
[ -x "$NEW" ] || die "$NEW is not built"
[ "$(id -u)" = 0 ] || die "chroot needs root"
usable_root "$D13ROOT" && [ "$(stat -c %d:%i "$SHM")" = "$(stat -c %d:%i "$D13ROOT$SHM" 2>/dev/null)" ] ||
  die "$D13ROOT's /proc, /dev and $SHM are not mounted (mount --bind them)"
mkdir -p "$RAW"

# The root's proc, dev, dev/shm and sys are mounted by whoever made it (scripts/debian13.sh
# while it runs, or by hand for the development root): this script mounts nothing.
IN=$(mktemp -d "$D13ROOT/tmp/nbdcopy-generations.XXXXXX") # scratch, seen from outside
RIN=/${IN#"$D13ROOT"/}                                    # the same, seen from inside
PIDFILES=()
# SESSION_NICE: this session's autogroup nice (-20 .. 19) while the rounds run. With
# autogroups (/proc/sys/kernel/sched_autogroup_enabled), the scheduler shares the cores
# between sessions first, so on a machine shared with others' builds a copy gets a session's
# share whatever its processes' nice: -20 gives it most of the machine, as on a quiet one.
OLD_SESSION_NICE=
if [ -n "${SESSION_NICE:-}" ] && [ -w /proc/self/autogroup ]; then
  OLD_SESSION_NICE=$(awk '{print $3}' /proc/self/autogroup)
  echo "$SESSION_NICE" >/proc/self/autogroup
fi
cleanup() {
  local f
  [ -z "$OLD_SESSION_NICE" ] || echo "$OLD_SESSION_NICE" >/proc/self/autogroup
  for f in "${PIDFILES[@]}"; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  rm -rf "$IN"
}
trap cleanup EXIT

C13="chroot $D13ROOT"
# source GEN NAME NBDKIT-ARGS...: an nbdkit of generation GEN serving all rounds on
# $IN/NAME.sock; its pid file is $IN/NAME.pid.
source_server() {
  local gen=$1 name=$2
  shift 2
  # -f: in this session (a daemon's setsid would put it in an autogroup of its own, with
  # a share of the machine of its own, unlike the per-run servers).
  if [ "$gen" = 13 ]; then
    $C13 nbdkit -f -U "$RIN/$name.sock" -P "$RIN/$name.pid" "$@" &
  else
    nbdkit -f -U "$IN/$name.sock" -P "$IN/$name.pid" "$@" &
  fi
  PIDFILES+=("$IN/$name.pid")
  # nbdkit writes its pid file after it forks: wait for it (--also needs it).
  local i
  for ((i = 0; i < 200; i++)); do
    [ -s "$IN/$name.pid" ] && [ -S "$IN/$name.sock" ] && break
    sleep 0.05
  done
  [ -s "$IN/$name.pid" ] || die "nbdkit $* did not start"
  echo "nbdkit($gen) $*" >>"$RAW/$W.servers"
}
uri() { echo "nbd+unix:///?socket=$1"; }

# The commands of workload W, as LABEL<TAB>COMMAND lines (floor_rounds.py's CMD forms).
commands() {
  local w=$1 g prog label dst src rsrc
  case $w in
    pattern | sparse | latency)
      for g in 12 13; do
        if [ "$g" = 12 ]; then
          src=$(uri "$IN/$w-src12.sock")
          dst="nbdkit -f -U {sock} memory size=$MEM"
        else
          src=$(uri "$IN/$w-src13.sock") rsrc=$(uri "$RIN/$w-src13.sock")
          dst="$C13 nbdkit -f -U {rsock} memory size=$MEM"
        fi
        for label in ours base; do
          prog=$NEW
          [ $label = base ] && { [ -n "$BASE" ] || continue; prog=$BASE; }
          printf '%s@%s\t%s ::: %s\n' "$label" "$g" "$dst" "$prog --flush $src $(uri '{sock}')"
        done
        if [ "$g" = 12 ]; then
          printf 'nbdcopy-1.14\t%s ::: %s\n' "$dst" "/usr/bin/nbdcopy --flush $src $(uri '{sock}')"
          printf 'qemu-img-7.2\t%s ::: %s\n' "$dst" \
            "qemu-img convert -n -W -f raw -O raw $src $(uri '{sock}')"
        else
          printf 'nbdcopy-1.22\t%s ::: %s\n' "$dst" "$C13 nbdcopy --flush $rsrc $(uri '{rsock}')"
          printf 'qemu-img-10\t%s ::: %s\n' "$dst" \
            "$C13 qemu-img convert -n -W -f raw -O raw $rsrc $(uri '{rsock}')"
        fi
      done
      ;;
    readnull)
      printf 'ours@12\t%s\n' "$NEW $(uri "$IN/$w-src12.sock") null:"
      [ -z "$BASE" ] || printf 'base@12\t%s\n' "$BASE $(uri "$IN/$w-src12.sock") null:"
      printf 'nbdcopy-1.14\t%s\n' "/usr/bin/nbdcopy $(uri "$IN/$w-src12.sock") null:"
      printf 'ours@13\t%s\n' "$NEW $(uri "$IN/$w-src13.sock") null:"
      [ -z "$BASE" ] || printf 'base@13\t%s\n' "$BASE $(uri "$IN/$w-src13.sock") null:"
      printf 'nbdcopy-1.22\t%s\n' "$C13 nbdcopy $(uri "$RIN/$w-src13.sock") null:"
      ;;
    fsimage)
      # No servers: ours is the same program in both generations.
      dst=$SHM/nbdcopy-generations.img
      printf 'ours@12\t%s\n' "$NEW $IN/img.raw $dst"
      [ -z "$BASE" ] || printf 'base@12\t%s\n' "$BASE $IN/img.raw $dst"
      printf 'nbdcopy-1.14\t%s\n' "/usr/bin/nbdcopy $IN/img.raw $dst"
      printf 'qemu-img-7.2\t%s\n' "qemu-img convert -W -f raw -O raw $IN/img.raw $dst"
      printf 'nbdcopy-1.22\t%s\n' "$C13 nbdcopy $RIN/img.raw $dst"
      printf 'qemu-img-10\t%s\n' "$C13 qemu-img convert -W -f raw -O raw $RIN/img.raw $dst"
      ;;
    qcow2)
      dst=$SHM/nbdcopy-generations.img
      local q12="qemu-nbd -r -f qcow2 $IN/img.qcow2" q13="$C13 qemu-nbd -r -f qcow2 $RIN/img.qcow2"
      printf 'ours@12\t%s\n' "$NEW -- [ $q12 ] $dst"
      printf 'split@12\t%s ::: %s\n' "$q12 -k {sock}" "$NEW -C 1 $(uri '{sock}') $dst"
      printf 'nbdcopy-1.14\t%s\n' "/usr/bin/nbdcopy -- [ $q12 ] $dst"
      printf 'qemu-img-7.2\t%s\n' "qemu-img convert -f qcow2 -O raw $IN/img.qcow2 $dst"
      printf 'ours@13\t%s\n' "$NEW -- [ $q13 ] $dst"
      printf 'split@13\t%s ::: %s\n' "$q13 -k {rsock}" "$NEW -C 1 $(uri '{sock}') $dst"
      [ -z "$BASE" ] || printf 'base@13\t%s\n' "$BASE -- [ $q13 ] $dst"
      printf 'nbdcopy-1.22\t%s\n' "$C13 nbdcopy -- [ qemu-nbd -r -f qcow2 $RIN/img.qcow2 ] $dst"
      printf 'qemu-img-10\t%s\n' "$C13 qemu-img convert -f qcow2 -O raw $RIN/img.qcow2 $dst"
      ;;
    disk)
      local f=$DISKDIR/disk.raw rf=/${DISKDIR#"$D13ROOT"/}/disk.raw
      local d12="qemu-nbd -f raw --cache=none --aio=native $f"
      local d13="$C13 qemu-nbd -f raw --cache=none --aio=native $rf"
      printf 'ours@12\t%s\n' "$NEW -- $(uri "$IN/$w-src12.sock") [ $d12 ]"
      [ -z "$BASE" ] || printf 'base@12\t%s\n' "$BASE -- $(uri "$IN/$w-src12.sock") [ $d12 ]"
      printf 'nbdcopy-1.14\t%s\n' "/usr/bin/nbdcopy -- $(uri "$IN/$w-src12.sock") [ $d12 ]"
      printf 'qemu-img-7.2\t%s\n' "qemu-img convert -n -t none -f raw -O raw $(uri "$IN/$w-src12.sock") $f"
      # The best an NBD client gets from this qemu-nbd: qemu-img through it.
      printf 'nbd-floor@12\t%s ::: %s\n' "$d12 -k {sock}" \
        "qemu-img convert -n -f raw -O raw $(uri "$IN/$w-src12.sock") $(uri '{sock}')"
      printf 'ours@13\t%s\n' "$NEW -- $(uri "$IN/$w-src13.sock") [ $d13 ]"
      [ -z "$BASE" ] || printf 'base@13\t%s\n' "$BASE -- $(uri "$IN/$w-src13.sock") [ $d13 ]"
      printf 'nbdcopy-1.22\t%s\n' "$C13 nbdcopy -- $(uri "$RIN/$w-src13.sock") [ qemu-nbd -f raw --cache=none --aio=native $rf ]"
      printf 'qemu-img-10\t%s\n' "$C13 qemu-img convert -n -t none -f raw -O raw $(uri "$RIN/$w-src13.sock") $rf"
      printf 'nbd-floor@13\t%s ::: %s\n' "$d13 -k {rsock}" \
        "$C13 qemu-img convert -n -f raw -O raw $(uri "$RIN/$w-src13.sock") $(uri '{rsock}')"
      ;;
    *) die "unknown workload $w" ;;
  esac
}

# setup W: starts W's sources, sets MEM (the destination's size), PREPARE (before every run),
# MIB (the workload's size) and OPTS (floor_rounds.py's options).
setup() {
  local w=$1 g
  : >"$RAW/$w.servers"
  PREPARE="" OPTS=(--rotate --root "$D13ROOT")
  case $w in
    pattern | readnull | disk) MIB=1024; MEM=1G
      for g in 12 13; do source_server $g "$w-src$g" -r pattern size=1G; done ;;
    sparse) MIB=8192; MEM=8G
      for g in 12 13; do source_server $g "$w-src$g" -r sparse-random size=8G percent=10 seed=1; done ;;
    latency) MIB=512; MEM=512M
      for g in 12 13; do
        source_server $g "$w-src$g" -r --filter=delay pattern size=512M delay-read=10ms
      done ;;
    fsimage | qcow2)
      fs_image
      MIB=$(($(stat -c %s "$FSIMAGE") >> 20))
      PREPARE="rm -f $SHM/nbdcopy-generations.img" ;;
  esac
  case $w in
    pattern | sparse | latency) OPTS+=(--stop-server) ;;
    disk)
      mkdir -p "$DISKDIR"
      fallocate -l 1G "$DISKDIR/disk.raw"
      PREPARE=sync ;;
  esac
  for g in 12 13; do [ -s "$IN/$w-src$g.pid" ] && OPTS+=(--also "$IN/$w-src$g.pid"); done
  echo "$MIB" >"$RAW/$w.size"
}

# The file-system image (bench/ab.sh's, built once) and its qcow2, linked into the root.
fs_image() {
  if [ ! -s "$FSIMAGE" ]; then
    mkdir -p "$(dirname "$FSIMAGE")"
    echo "generations: building $FSIMAGE (mke2fs -d /usr/share, minutes)" >&2
    mke2fs -q -F -t ext4 -d /usr/share "$FSIMAGE.tmp" 2G >/dev/null
    mv "$FSIMAGE.tmp" "$FSIMAGE"
  fi
  local qcow2=${FSIMAGE%.raw}.qcow2
  if [ ! -s "$qcow2" ]; then
    qemu-img convert -f raw -O qcow2 "$FSIMAGE" "$qcow2.tmp" && mv "$qcow2.tmp" "$qcow2"
  fi
  [ -e "$IN/img.raw" ] || ln "$FSIMAGE" "$IN/img.raw" 2>/dev/null ||
    cp --sparse=always "$FSIMAGE" "$IN/img.raw"
  [ -e "$IN/img.qcow2" ] || ln "$qcow2" "$IN/img.qcow2" 2>/dev/null || cp "$qcow2" "$IN/img.qcow2"
}

# check W LABEL CMD: one more run into a fresh destination, compared with the source.
check() {
  local w=$1 label=$2 cmd=$3 rc=0 result server client sock=$IN/check.sock rsock=$RIN/check.sock
  local spid=
  bash -c "$PREPARE"
  if [[ $cmd == *":::"* ]]; then
    server=${cmd%%:::*} client=${cmd#*:::}
    server=${server//\{rsock\}/$rsock} client=${client//\{rsock\}/$rsock}
    server=${server//\{sock\}/$sock} client=${client//\{sock\}/$sock}
    rm -f "$sock"
    bash -c "exec $server" >/dev/null 2>&1 &
    spid=$!
    while [ ! -S "$sock" ]; do sleep 0.01; done
    bash -c "$client" >/dev/null 2>"$RAW/$w.$label.stderr" || rc=$?
  else
    bash -c "$cmd" >/dev/null 2>"$RAW/$w.$label.stderr" || rc=$?
  fi
  local src gen=13
  case $label in *@12 | *-1.14 | *-7.2) gen=12 ;; esac
  case $w in
    pattern | sparse | latency | disk) src=$(uri "$IN/$w-src$gen.sock") ;;
    *) src=$FSIMAGE ;;
  esac
  if [ "$rc" -ne 0 ]; then
    result="exit $rc"
  elif [ "$w" = readnull ]; then
    result=ok
  elif [[ $w == @(pattern|sparse|latency) ]]; then
    qemu-img compare -q -f raw -F raw "$src" "$(uri "$sock")" && result=identical || result=DIFFERENT
  elif [ "$w" = disk ]; then
    qemu-img compare -q -f raw -F raw "$src" "$DISKDIR/disk.raw" && result=identical || result=DIFFERENT
  else
    cmp -s "$src" "$SHM/nbdcopy-generations.img" && result=identical || result=DIFFERENT
  fi
  if [ -n "$spid" ]; then
    if [[ $server == qemu-nbd* || $server == *" qemu-nbd "* ]]; then wait "$spid" || true
    else kill "$spid"; wait "$spid" || true; fi
  fi
  [ "$w" != disk ] || { dd if=/dev/zero of="$DISKDIR/disk.raw" bs=1M count=1024 conv=notrunc status=none; }
  [ "$result" = identical ] || [ "$result" = ok ] || echo "generations: $w: $label: $result" >&2
  printf '%s\t%s\t%s\n' "$label" "$rc" "$result" >>"$RAW/$w.check"
}

versions() {
  {
    echo "ours: $("$NEW" --version 2>&1 | head -2 | tr '\n' ' ')"
    echo "nbdcopy-1.14: $(/usr/bin/nbdcopy --version 2>&1 | head -1)"
    echo "nbdcopy-1.22: $($C13 nbdcopy --version 2>&1 | head -1)"
    echo "qemu-img-7.2: $(qemu-img --version | head -1)"
    echo "qemu-img-10: $($C13 qemu-img --version | head -1)"
    echo "nbdkit(12): $(nbdkit --version)"
    echo "nbdkit(13): $($C13 nbdkit --version)"
    echo "root: $D13ROOT"
    echo "commit: $(git -C "$TOP" rev-parse --short HEAD)$(git -C "$TOP" diff --quiet HEAD -- src || echo '+dirty')"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "runs: $RUNS"
    echo "session autogroup: $(cat /proc/self/autogroup 2>/dev/null)"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$RAW/versions"
}

versions
for W in "${WORKLOADS[@]}"; do
  setup "$W"
  args=()
  : >"$RAW/$W.cmds"
  : >"$RAW/$W.check"
  while IFS=$'\t' read -r label cmd; do
    args+=("$label" "$cmd")
    printf '%s\t%s\n' "$label" "$cmd" >>"$RAW/$W.cmds"
  done < <(commands "$W")
  echo "=== $W ($MIB MiB): ${#args[@]} / 2 commands, $RUNS rounds ===" >&2
  python3 "$BENCH/floor_rounds.py" "${OPTS[@]}" "$RAW/$W.json" "$RUNS" "$WARMUP" "$PREPARE" \
    "${args[@]}" || echo "generations: floor_rounds failed on $W" >&2
  for ((i = 0; i < ${#args[@]}; i += 2)); do check "$W" "${args[i]}" "${args[i + 1]}"; done
  for f in "${PIDFILES[@]}"; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  PIDFILES=()
  rm -f "$SHM/nbdcopy-generations.img"
done
[ ! -d "$DISKDIR" ] || rm -rf "$DISKDIR"
python3 "$BENCH/report_generations.py" "$RAW"
