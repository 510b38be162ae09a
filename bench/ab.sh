#!/usr/bin/env bash
# bench/ab.sh: A/B timing of this build against an older commit, in alternating runs.
#
#   bench/ab.sh OLD_COMMIT [WORKLOAD...]
#
# Builds OLD_COMMIT once in a temporary git worktree into its own build directory (ccache,
# cached in $ABCACHE/<sha>/), then runs the new binary ($NEW, default build/nbdcopy) and
# the old one in turn, new old new old ..., $RUNS times each, on each workload, under
# /usr/bin/time. Optional peers ($PEERS: nbdcopy qemu-img cp dd) join the same rotation.
# Prints for each command the median wall, the median CPU (user+sys) and the CPU per GiB
# of source data, and for each peer the median of the pairwise ratios to "new" (run i of
# the peer over run i of new). Each destination is removed before every run (not timed).
# $WARMUP rounds (default 1) run first, untimed.
#
# Workloads (source -> destination):
#   file-to-file  ext4 image (mke2fs -d $FSIMAGE_DIR, $FSIMAGE_SIZE) -> new file on $SHM
#   file-to-disk  the same image -> new file in $DISKDIR (the disk; sync before each run)
#   sparsefile    bench/mksparse.py 2 GiB (768 MiB data, holes) -> new file on $SHM
#   pattern       nbdkit pattern 1 GiB -> nbdkit memory, --flush (the NBD data path)
#   latency       nbdkit pattern 512 MiB, 10 ms a read (delay filter) -> nbdkit memory, --flush
#   qcow2-source  the ext4 image in qcow2 through [ qemu-nbd -r -f qcow2 ] -> new file on $SHM
#   file-to-qcow2 the ext4 image -> a new qcow2 image through [ qemu-nbd -f qcow2 ] (on $SHM)
#   file-to-block the ext4 image -> a loop device over a file of its size on $SHM (root;
#                 the last close of a block device writes its page cache back, so the
#                 times include the writeback through the loop device)
#   file-to-disk-block  the same into a loop device with direct I/O over a preallocated
#                 file in $DISKDIR (root; writes cost what the disk's do; sync before each run)
#   nbd-to-block  nbdkit pattern 1 GiB -> a loop device over a 1 GiB file on $SHM (root)
# Default: file-to-file file-to-disk. The NBD servers of a workload run for all of its
# rounds (Unix sockets in a temporary directory); [ qemu-nbd ] is started by each copier.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
NEW=${NEW:-$ROOT/build/nbdcopy}
RUNS=${RUNS:-7}
WARMUP=${WARMUP:-1}
PEERS=${PEERS:-}
SHM=${SHM:-/dev/shm}
ABCACHE=${ABCACHE:-$BENCH/out/ab}
DISKDIR=${DISKDIR:-$BENCH/out/disk}
FSIMAGE_DIR=${FSIMAGE_DIR:-/usr/share}
FSIMAGE_SIZE=${FSIMAGE_SIZE:-2G}
FSIMAGE=${FSIMAGE:-$ABCACHE/fs-$(echo "$FSIMAGE_DIR" | tr -c 'A-Za-z0-9\n' _)-$FSIMAGE_SIZE.raw}
TIME=/usr/bin/time

die() { echo "ab: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: bench/ab.sh OLD_COMMIT [WORKLOAD...]"
OLD_REV=$1
shift
WORKLOADS=("${@:-file-to-file file-to-disk}")
read -r -a WORKLOADS <<<"${WORKLOADS[*]}"
[ -x "$TIME" ] || die "/usr/bin/time is missing (apt-get install time)"
[ -x "$NEW" ] || die "$NEW is not built"

# build_old REV: prints the path of REV's nbdcopy, building it first if needed.
build_old() {
  local sha dir wt
  sha=$(git -C "$ROOT" rev-parse --verify "$1^{commit}") || die "$1: no such commit"
  dir=$ABCACHE/$sha
  if [ ! -x "$dir/build/nbdcopy" ]; then
    wt=$(mktemp -d "${TMPDIR:-/tmp}/ab-worktree.XXXXXX")
    git -C "$ROOT" worktree add --detach "$wt" "$sha" >&2
    # Interrupted (Ctrl-C, kill): the temporary worktree goes all the same.
    trap 'git -C "$ROOT" worktree remove --force "$wt"; exit 130' INT TERM
    mkdir -p "$dir"
    # A base directory: ccache hashes paths below it relatively, so that the
    # next temporary worktree of a similar commit hits the cache.
    export CCACHE_BASEDIR=$wt
    cmake -S "$wt" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null &&
      cmake --build "$dir/build" -j2 --target nbdcopy >&2 ||
      { git -C "$ROOT" worktree remove --force "$wt"; die "building $sha failed"; }
    git -C "$ROOT" worktree remove --force "$wt"
    trap - INT TERM
  fi
  echo "$dir/build/nbdcopy"
}

fs_image() {
  [ -s "$FSIMAGE" ] && return 0
  command -v mke2fs >/dev/null || die "mke2fs is missing (apt-get install e2fsprogs)"
  mkdir -p "$(dirname "$FSIMAGE")"
  echo "ab: building $FSIMAGE: mke2fs -t ext4 -d $FSIMAGE_DIR ($FSIMAGE_SIZE; minutes)" >&2
  mke2fs -q -F -t ext4 -d "$FSIMAGE_DIR" "$FSIMAGE.tmp" "$FSIMAGE_SIZE" >/dev/null
  mv "$FSIMAGE.tmp" "$FSIMAGE"
}

qcow2_image() {
  QCOW2=${FSIMAGE%.raw}.qcow2
  [ -s "$QCOW2" ] && return 0
  qemu-img convert -f raw -O qcow2 "$FSIMAGE" "$QCOW2.tmp" && mv "$QCOW2.tmp" "$QCOW2"
}

# nbdkit_server NAME ARGS...: an nbdkit on $SOCKETS/$WORKLOAD-NAME.sock for this workload's
# rounds (named by workload: the last one's may still be going away).
nbdkit_server() {
  local name=$WORKLOAD-$1
  shift
  nbdkit -U "$SOCKETS/$name.sock" -P "$SOCKETS/$name.pid" "$@" ||
    die "nbdkit $* did not start"
  SERVER_PIDS+=("$(cat "$SOCKETS/$name.pid")")
}
nbd_uri() { echo "nbd+unix:///?socket=$SOCKETS/$WORKLOAD-$1.sock"; }

stop_servers() {
  local pid dev
  for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  SERVER_PIDS=()
  for dev in "${LOOP_DEVS[@]}"; do losetup -d "$dev" 2>/dev/null || true; done
  LOOP_DEVS=()
}

# loop_device FILE [LOSETUP OPTION...]: attaches FILE to a free loop device and prints the device (the caller
# adds it to LOOP_DEVS: this runs in a subshell).
loop_device() {
  [ "$(id -u)" = 0 ] || die "$WORKLOAD needs root (losetup)"
  losetup -f --show "$@" || die "losetup $* failed"
}

# setup W: sets SRC and DST (operands), OPTS (options of every copier), PRE (what runs,
# untimed, before every run), CHECK (a command whose success says the copy is right),
# DATA (bytes of data the source holds) and PEERS_OK (the peers that can run it).
setup() {
  PRE=: OPTS='' CHECK='' PEERS_OK="nbdcopy qemu-img cp dd"
  case $1 in
    file-to-file) fs_image; SRC=$FSIMAGE; DST=$SHM/ab-$1.img ;;
    file-to-disk) fs_image; SRC=$FSIMAGE; mkdir -p "$DISKDIR"; DST=$DISKDIR/ab-$1.img; PRE=sync ;;
    sparsefile)
      SRC=$ABCACHE/sparse-2G.raw
      [ -s "$SRC" ] || python3 "$BENCH/mksparse.py" "$SRC" 2048 1
      DST=$SHM/ab-$1.img
      ;;
    pattern | latency)
      local mib=1024
      if [ "$1" = pattern ]; then
        nbdkit_server src -r pattern "size=${mib}M"
      else
        mib=512
        nbdkit_server src -r --filter=delay pattern "size=${mib}M" delay-read=10ms
      fi
      nbdkit_server dst memory "size=${mib}M"
      SRC=$(nbd_uri src) DST=$(nbd_uri dst) OPTS=--flush PEERS_OK=nbdcopy
      CHECK="qemu-img compare -q -f raw -F raw $SRC $DST"
      DATA=$((mib << 20))
      return
      ;;
    qcow2-source)
      fs_image
      qcow2_image
      SRC="[ qemu-nbd -r -f qcow2 $QCOW2 ]" DST=$SHM/ab-$1.img OPTS=-- PEERS_OK=nbdcopy
      CHECK="cmp -s $FSIMAGE $DST"
      ;;
    file-to-qcow2)
      fs_image
      local out=$SHM/ab-$1.qcow2
      SRC=$FSIMAGE DST="[ qemu-nbd -f qcow2 $out ]" OPTS=-- PEERS_OK=nbdcopy
      PRE="rm -f $out; qemu-img create -q -f qcow2 $out $(stat -c %s "$FSIMAGE")"
      CHECK="qemu-img compare -q -f raw -F qcow2 $FSIMAGE $out"
      ;;
    file-to-block)
      fs_image
      local backing=$SHM/ab-$1.backing
      rm -f "$backing"
      truncate -s "$(stat -c %s "$FSIMAGE")" "$backing"
      SRC=$FSIMAGE PEERS_OK=nbdcopy
      DST=$(loop_device "$backing")
      LOOP_DEVS+=("$DST")
      rm -f "$backing"  # the loop device keeps it until it is detached
      ;;
    file-to-disk-block)
      # A device whose writes cost what the disk's do: direct I/O into a
      # preallocated file on the disk.
      fs_image
      mkdir -p "$DISKDIR"
      local backing=$DISKDIR/ab-$1.backing
      rm -f "$backing"
      fallocate -l "$(stat -c %s "$FSIMAGE")" "$backing"
      SRC=$FSIMAGE PEERS_OK=nbdcopy PRE=sync
      DST=$(loop_device "$backing" --direct-io=on)
      LOOP_DEVS+=("$DST")
      rm -f "$backing"
      ;;
    nbd-to-block)
      nbdkit_server src -r pattern size=1G
      local backing=$SHM/ab-$1.backing
      rm -f "$backing"
      truncate -s 1G "$backing"
      SRC=$(nbd_uri src) PEERS_OK=nbdcopy
      DST=$(loop_device "$backing")
      LOOP_DEVS+=("$DST")
      rm -f "$backing"
      CHECK="qemu-img compare -q -f raw -F raw $SRC $DST"
      DATA=$((1 << 30))
      return
      ;;
    *) die "$1: unknown workload (file-to-file file-to-disk sparsefile pattern latency qcow2-source file-to-qcow2 file-to-block file-to-disk-block nbd-to-block)" ;;
  esac
  [ -n "$CHECK" ] || CHECK="cmp -s $SRC $DST"
  local data_file=$FSIMAGE
  [ -f "$SRC" ] && data_file=$SRC
  DATA=$(($(stat -c '%b * %B' "$data_file")))
}

# command_for LABEL: the command line of one copy of $SRC to $DST.
command_for() {
  case $1 in
    new) echo "$NEW $OPTS $SRC $DST" ;;
    old) echo "$OLD $OPTS $SRC $DST" ;;
    nbdcopy) echo "/usr/bin/nbdcopy $OPTS $SRC $DST" ;;
    qemu-img) echo "qemu-img convert -W -f raw -O raw $SRC $DST" ;;
    cp) echo "cp --sparse=always $SRC $DST" ;;
    dd) echo "dd if=$SRC of=$DST bs=1M conv=sparse status=none" ;;
    *) die "$1: unknown peer (nbdcopy qemu-img cp dd)" ;;
  esac
}

OLD=$(build_old "$OLD_REV")
read -r -a PEER_LIST <<<"$PEERS"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ab.XXXXXX")
SOCKETS=$(mktemp -d /tmp/ab-sock.XXXXXX)  # short: a Unix socket path has ~107 bytes
SERVER_PIDS=()
LOOP_DEVS=()
trap 'stop_servers; rm -rf "$OUT" "$SOCKETS"' EXIT
echo "ab: new = $NEW ($(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo +dirty))"
echo "ab: old = $OLD ($(git -C "$ROOT" rev-parse --short "$OLD_REV"))"
for w in "${WORKLOADS[@]}"; do
  WORKLOAD=$w
  setup "$w"
  labels=(new old)
  for label in "${PEER_LIST[@]}"; do
    if [[ " $PEERS_OK " == *" $label "* ]]; then labels+=("$label"); else
      echo "ab: $w: $label cannot copy $SRC to $DST, left out" >&2; fi
  done
  # A round first that is not timed: the first copy of a workload pays for what the
  # rest find ready (a new nbdkit memory's pages, a cold image), and new always runs first.
  for ((i = -WARMUP; i < RUNS; i++)); do
    for label in "${labels[@]}"; do
      times=$OUT/$w.$label
      ((i >= 0)) || times=/dev/null
      if [ -f "$DST" ]; then rm -f "$DST"; fi
      sh -c "$PRE"
      read -r -a cmd <<<"$(command_for "$label")"
      "$TIME" -f '%e %U %S' -a -o "$times" "${cmd[@]}" >/dev/null ||
        die "$w: $label failed: ${cmd[*]}"
      sh -c "$CHECK" || die "$w: $label: the copy differs from the source ($CHECK)"
    done
  done
  if [ -f "$DST" ]; then rm -f "$DST"; fi
  stop_servers
  echo "== $w: $SRC -> $DST, $RUNS alternating runs each," \
    "$((DATA >> 20)) MiB of data"
  python3 - "$OUT" "$w" "$DATA" "${labels[@]}" <<'EOF'
import statistics, sys
out, w, data, labels = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
runs = {}
for label in labels:
    with open(f"{out}/{w}.{label}") as f:
        rows = [line.split() for line in f if line.strip() and line[0].isdigit()]
    runs[label] = [(float(e), float(u) + float(s)) for e, u, s in rows]
gib = data / (1 << 30)
print(f"{'command':10} {'wall s':>8} {'cpu s':>8} {'cpu s/GiB':>10} {'wall/new':>9} {'cpu/new':>8}")
for label in labels:
    wall = statistics.median(r[0] for r in runs[label])
    cpu = statistics.median(r[1] for r in runs[label])
    ratio = lambda k: statistics.median(
        b[k] / a[k] for a, b in zip(runs["new"], runs[label]) if a[k] > 0)
    print(f"{label:10} {wall:8.3f} {cpu:8.3f} {cpu / gib:10.3f} {ratio(0):9.3f} {ratio(1):8.3f}")
EOF
done
