# shellcheck shell=bash
# bench/local_workloads.sh: the fragmented, qcow2-to-file and file-to-file workloads of
# bench/run.sh (sourced by it; uses its T, SHM, RAW, SIZE, OURS, REF, QEMU_IMG, TIME, QUICK,
# start_server, stop_server, shjoin, die).
#
# Every command is timed side by side in one hyperfine run into a file on tmpfs ($SHM),
# removed before every run. Labels (W.LABEL.* in $RAW):
#   fragmented     ours, nbdcopy              nbdkit sparse-random, 512-byte runs -> file
#   qcow2-to-file  ours, nbdcopy, ours-null, qemu-img
#                                             [ qemu-nbd -r -f qcow2 img.qcow2 ] -> file
#   file-to-file   ours, nbdcopy, qemu-img    img.raw -> file
#                  ours-disk (informational, its own hyperfine run W-disk.json): the same
#                  copy with --flush into a file on the real disk ($DISKDIR)
#   file-to-block  ours, nbdcopy, qemu-img    img.raw -> a loop device over a file of its
#                  size on tmpfs (root; skipped otherwise). The device is discarded whole
#                  before every run (blkdiscard), never removed; the times include the
#                  writeback that a block device's last close waits for.

# The file-system image: mke2fs -d of a system directory, about 1.5 x its contents, and its
# qcow2 conversion. Cached in $FSCACHE across runs (keyed by directory, size and versions).
FSIMAGE_DIR=${FSIMAGE_DIR:-$([ "$QUICK" = 1 ] && echo /usr/share/doc || echo /usr/share)}
FSCACHE=${FSCACHE:-$BENCH/out/fsimage}
DISKDIR=${DISKDIR:-$BENCH/out/disk}
FS_RAW='' FS_QCOW2='' FS_MIB=0 FS_DESC=()

build_fs_image() {
  [ -n "$FS_RAW" ] && return 0
  command -v mke2fs >/dev/null || die "mke2fs is missing (apt-get install e2fsprogs)"
  command -v qemu-nbd >/dev/null || die "qemu-nbd is missing (apt-get install qemu-utils)"
  [ -d "$FSIMAGE_DIR" ] || die "FSIMAGE_DIR $FSIMAGE_DIR is not a directory"
  local content_mib name key
  content_mib=$(du -sm "$FSIMAGE_DIR" | cut -f1)
  # 1.5 x the contents, rounded up to 64 MiB.
  FS_MIB=${FSIMAGE_MIB:-$(((content_mib * 3 / 2 + 63) / 64 * 64))}
  name=$(echo "$FSIMAGE_DIR" | tr -c 'A-Za-z0-9\n' _)-$FS_MIB
  FS_RAW=$FSCACHE/$name.raw
  FS_QCOW2=$FSCACHE/$name.qcow2
  # sed, not head: under pipefail, a version command cut off by SIGPIPE would end the run.
  key="dir=$FSIMAGE_DIR content_mib=$content_mib size=${FS_MIB}M $(mke2fs -V 2>&1 | sed -n 1p)"
  key+=" $("$QEMU_IMG" --version | sed -n 1p)"
  mkdir -p "$FSCACHE"
  if [ "$(cat "$FSCACHE/$name.key" 2>/dev/null)" != "$key" ] ||
    [ ! -s "$FS_RAW" ] || [ ! -s "$FS_QCOW2" ]; then
    echo "bench: building the file-system image: mke2fs -t ext4 -d $FSIMAGE_DIR (${content_mib} MiB)" \
      "in ${FS_MIB} MiB, then qcow2 (cached in $FSCACHE)"
    rm -f "$FS_RAW" "$FS_QCOW2" "$FSCACHE/$name.key"
    mke2fs -q -F -t ext4 -d "$FSIMAGE_DIR" "$FS_RAW" "${FS_MIB}M" >/dev/null ||
      die "mke2fs -d $FSIMAGE_DIR failed"
    "$QEMU_IMG" convert -f raw -O qcow2 "$FS_RAW" "$FS_QCOW2" || die "qemu-img convert to qcow2 failed"
    echo "$key" >"$FSCACHE/$name.key"
  fi
  FS_DESC=("mke2fs -t ext4 -d $FSIMAGE_DIR img.raw ${FS_MIB}M   # ${content_mib} MiB of files;\
 $(($(stat -c '%b * %B' "$FS_RAW") >> 20)) MiB allocated"
    "qemu-img convert -f raw -O qcow2 img.raw img.qcow2   # $(($(stat -c %s "$FS_QCOW2") >> 20)) MiB")
}

# setup_local W: sets SRCV (a file, an NBD URI, or -- [ CMD ]), DST (on tmpfs), CMP (a
# file or URI holding the source's bytes), LABELS and SIZE[W].
setup_local() {
  local w=$1
  : >"$T/servers.log"
  DST=$SHM/$w.dst.img
  SRCV=()
  case $w in
    fragmented)
      start_server "$w-src" -r sparse-random "size=${SIZE[$w]}M" percent=50 runlength=512 seed=1
      SRCV=("nbd+unix:///?socket=$T/$w-src.sock")
      # qemu-img compare takes minutes on this source: the copies are compared with cmp
      # against one made by /usr/bin/nbdcopy (another implementation).
      CMP=$SHM/$w.reference.img
      "$REF" "${SRCV[0]}" "$CMP" || die "$REF could not copy the $w source"
      echo "$REF SRC $CMP   # reference for the checks (cmp)" >>"$T/servers.log"
      LABELS=(ours nbdcopy)
      ;;
    qcow2-to-file)
      build_fs_image
      printf '%s\n' "${FS_DESC[@]}" >>"$T/servers.log"
      SRCV=(-- '[' qemu-nbd -r -f qcow2 "$FS_QCOW2" ']')
      CMP=$FS_RAW
      SIZE[$w]=$FS_MIB
      LABELS=(ours nbdcopy ours-null qemu-img)
      ;;
    file-to-file | file-to-block)
      build_fs_image
      printf '%s\n' "${FS_DESC[@]}" >>"$T/servers.log"
      SRCV=("$FS_RAW")
      CMP=$FS_RAW
      SIZE[$w]=$FS_MIB
      LABELS=(ours nbdcopy qemu-img)
      [ "$w" = file-to-block ] || return 0
      local backing=$SHM/$w.backing
      rm -f "$backing"
      truncate -s "$(stat -c %s "$FS_RAW")" "$backing"
      BLOCK_BACKING=$backing
      DST=$(losetup -f --show "$backing") || die "$w: losetup failed"
      echo "losetup -f --show $backing   # $DST, the destination" >>"$T/servers.log"
      ;;
    *) die "unknown local workload $w" ;;
  esac
}

# Whether this machine can run W (file-to-block needs root and a loop device).
local_runnable() { # W
  [ "$1" != file-to-block ] && return 0
  [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && command -v blkdiscard >/dev/null &&
    losetup -f >/dev/null 2>&1
}

# The command that empties a destination before a run: rm for a file, blkdiscard (every
# byte reads as zero, nothing allocated in the backing file) for a block device.
empty_destination_cmd() { # DST
  # -f: the device holds a file system (the last copy); its warning says so on every run.
  if [ -b "$1" ]; then echo "bash -c 'blkdiscard -f $1 2>/dev/null'"; else echo "rm -f $1"; fi
}
empty_destination() { # DST
  if [ -b "$1" ]; then blkdiscard -f "$1" 2>/dev/null; else rm -f "$1"; fi
}

# Allocated bytes of a destination: a block device's are its backing file's.
allocated_bytes() { # DST
  local f=$1
  [ -b "$f" ] && f=$BLOCK_BACKING
  echo $(($(stat -c '%b * %B' "$f")))
}

# local_argv W LABEL DST [SRC...]: sets ARGV to LABEL's command (SRC defaults to SRCV).
local_argv() {
  local w=$1 label=$2 dst=$3
  shift 3
  local -a src=("${SRCV[@]}")
  [ $# -gt 0 ] && src=("$@")
  case $label in
    ours) ARGV=("$OURS" "${src[@]}" "$dst") ;;
    ours-null) ARGV=("$OURS" "${src[@]}" null:) ;;
    ours-disk) ARGV=("$OURS" --flush "${src[@]}" "$dst") ;;
    nbdcopy) ARGV=("$REF" "${src[@]}" "$dst") ;;
    qemu-img)
      case $w in
        qcow2-to-file) ARGV=("$QEMU_IMG" convert -f qcow2 -O raw "$FS_QCOW2" "$dst") ;;
        # -n: the device exists (qemu-img would try to create it).
        file-to-block) ARGV=("$QEMU_IMG" convert -n -W -f raw -O raw "${src[@]}" "$dst") ;;
        *) ARGV=("$QEMU_IMG" convert -W -f raw -O raw "${src[@]}" "$dst") ;;
      esac ;;
    *) die "unknown command $label" ;;
  esac
}

# The bytes in FILE equal the source's: cmp against a file, qemu-img compare otherwise.
same_as_source() { # FILE
  if [ -f "$CMP" ]; then
    cmp -s "$CMP" "$1"
  else
    "$QEMU_IMG" compare -q -f raw -F raw "$CMP" "$1" >/dev/null 2>&1
  fi
}

# Whether LABEL's command starts the [ CMD ] server itself.
spawns_server() { [ "${SRCV[0]}" = -- ] && [ "$1" != qemu-img ]; }

# Peak RSS of LABEL (which spawns its server) into W.LABEL.rss. A copier reaps its [ CMD ]
# server, and /usr/bin/time's peak RSS then counts the server's too: the same server runs
# here on a socket instead, and the copier gets --connections=1, the plan a [ CMD ] source
# gets.
served_rss() { # W LABEL DST
  local w=$1 label=$2 dst=$3 i pid rc=0
  local -a server=("${SRCV[@]:2:${#SRCV[@]}-3}")
  rm -f "$T/rss.sock" "$dst"
  "${server[@]}" -k "$T/rss.sock" >>"$T/nbdkit.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 200; i++)); do [ -S "$T/rss.sock" ] && break; sleep 0.05; done
  local_argv "$w" "$label" "$dst" "nbd+unix:///?socket=$T/rss.sock"
  ARGV=("${ARGV[0]}" --connections=1 "${ARGV[@]:1}")
  "$TIME" -f %M -o "$RAW/$w.$label.rss" "${ARGV[@]}" >/dev/null 2>>"$RAW/$w.$label.stderr" || rc=$?
  kill "$pid" 2>/dev/null || true   # qemu-nbd exits with its client; not if none came
  wait "$pid" 2>/dev/null || true
  rm -f "$T/rss.sock" "$dst"
  return "$rc"
}

# One extra run per command outside hyperfine, into a fresh destination: exit status, peak
# RSS, then the destination against the source, and its allocated bytes. W.check lines:
# LABEL RC CHECK ALLOCATED-BYTES.
local_check() { # W DST LABEL...
  local w=$1 dst0=$2 label dst rc check alloc
  shift 2
  : >"$RAW/$w.check"
  for label; do
    dst=$dst0
    [ "$label" = ours-null ] && dst=null:
    empty_destination "$dst0"
    local_argv "$w" "$label" "$dst"
    rc=0
    if spawns_server "$label"; then
      "${ARGV[@]}" >/dev/null 2>"$RAW/$w.$label.stderr" || rc=$?
    else
      "$TIME" -f %M -o "$RAW/$w.$label.rss" "${ARGV[@]}" >/dev/null \
        2>"$RAW/$w.$label.stderr" || rc=$?
    fi
    alloc=
    if [ "$rc" -ne 0 ]; then
      check="exit $rc"
    elif [ "$dst" = null: ]; then
      check=n/a
    elif same_as_source "$dst"; then
      check=identical
      alloc=$(allocated_bytes "$dst")
    else
      check=DIFFERENT
    fi
    [ "$check" = identical ] || [ "$check" = n/a ] || echo "bench: $w: $label check: $check" >&2
    empty_destination "$dst0"
    if spawns_server "$label"; then
      served_rss "$w" "$label" "$dst0" || echo "bench: $w: $label: the peak-RSS run failed" >&2
    fi
    printf '%s\t%s\t%s\t%s\n' "$label" "$rc" "$check" "$alloc" >>"$RAW/$w.check"
  done
}

run_local_workload() {
  local w=$1 label
  if ! local_runnable "$w"; then
    echo "bench: skipping $w: needs root, losetup, blkdiscard and a free loop device" >&2
    return 0
  fi
  setup_local "$w"
  echo
  echo "=== $w (${SIZE[$w]} MiB) ==="
  local -a hf=(--prepare "$(empty_destination_cmd "$DST")") ARGV=()
  : >"$RAW/$w.cmds"
  while read -r line; do printf 'server\t%s\n' "$line" >>"$RAW/$w.cmds"; done <"$T/servers.log"
  for label in "${LABELS[@]}"; do
    local_argv "$w" "$label" "$DST"
    hf+=(-n "$label" "$(shjoin "${ARGV[@]}")")
    printf '%s\t%s\n' "$label" "$(shjoin "${ARGV[@]}")" >>"$RAW/$w.cmds"
  done
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --export-json "$RAW/$w.json" "${hf[@]}" || echo "bench: hyperfine failed on $w" >&2
  local_check "$w" "$DST" "${LABELS[@]}"
  echo "${SIZE[$w]}" >"$RAW/$w.size"
  if [ "$w" = file-to-file ]; then run_disk_row "$w"; fi
  stop_server "$w-src"
  if [ -b "$DST" ]; then
    losetup -d "$DST" || echo "bench: $w: losetup -d $DST failed" >&2
    rm -f "$BLOCK_BACKING"
  else
    rm -f "$DST"
  fi
  rm -f "$SHM/$w.reference.img"
}

# Informational: the file-to-file copy into the real disk, with --flush so that the time
# includes the writeback; sync before every run so that no earlier writeback lands on it.
run_disk_row() { # W
  local w=$1 dst
  mkdir -p "$DISKDIR"
  dst=$DISKDIR/$w.dst.img
  echo
  echo "=== $w, informational: destination on the disk ($DISKDIR) ==="
  local_argv "$w" ours-disk "$dst"
  printf '%s\t%s\n' ours-disk "$(shjoin "${ARGV[@]}")" >>"$RAW/$w.cmds"
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --prepare "bash -c 'rm -f $dst; sync'" --export-json "$RAW/$w-disk.json" \
    -n ours-disk "$(shjoin "${ARGV[@]}")" || echo "bench: hyperfine failed on $w (disk)" >&2
  local rc=0 check alloc=
  rm -f "$dst"
  "$TIME" -f %M -o "$RAW/$w.ours-disk.rss" "${ARGV[@]}" >/dev/null \
    2>"$RAW/$w.ours-disk.stderr" || rc=$?
  if [ "$rc" -ne 0 ]; then
    check="exit $rc"
  elif same_as_source "$dst"; then
    check=identical
    alloc=$(($(stat -c '%b * %B' "$dst")))
  else
    check=DIFFERENT
  fi
  printf '%s\t%s\t%s\t%s\n' ours-disk "$rc" "$check" "$alloc" >>"$RAW/$w.check"
  rm -f "$dst"
  sync
}
