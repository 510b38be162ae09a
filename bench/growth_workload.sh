# shellcheck shell=bash
# bench/growth_workload.sh: how the cost of a copy grows with the work (sourced by
# bench/run.sh; uses its T, SHM, RAW, OURS, REF, QEMU_IMG, RUNS, WARMUP, BENCH, QUICK,
# start_server, stop_server, uri, shjoin and die).
#
# Two series, each a source file on tmpfs served by `nbdkit -r file` and copied into a file
# on tmpfs by ours, by /usr/bin/nbdcopy (libnbd 1.14) and, when a Debian 13 root is usable,
# by its nbdcopy 1.22 (label nbdcopy-1.22), alternating round by round
# (bench/floor_rounds.py, which also takes each copy's peak RSS from wait4):
#
#   fragmentation  1, 4 and 16 GiB of nbdkit sparse-random (percent=10 runlength=4096
#                  seed=1): a tenth of the image is data in runs of about 4 KiB, so the
#                  extents grow with the size (about 52,000 data runs per GiB)
#   virtual-size   1 GiB to 64 TiB of holes with 5 bytes of data at the start, the middle and
#                  the end: the data stays the same while the size grows 65,536-fold
#
# nbdcopy-1.22 is `chroot $D13ROOT nbdcopy SRC DST` (bench/debian13_root.bash finds the
# root; it needs root's privileges). It must reach the source server's unix socket and write
# the destination: both live on $SHM, whose tmpfs the root has bind-mounted as its /dev/shm,
# so one path names each of them inside the root and out. The source's socket is therefore
# put in $SHM (SOCKDIR, read by run.sh's start_server, uri and stop_server; its pid file
# stays in $T), for all three copiers alike: the same URI for every command, no second
# scratch directory inside the root, and $T and the other workloads as they were.
# GROWTH_D13=1 requires nbdcopy-1.22 (stops if the root is not usable), GROWTH_D13=0 leaves
# it out; unset, it runs when the root is usable: $D13ROOT/usr/bin/nbdcopy, the root's /dev
# and /proc mounted, $D13ROOT$SHM the same directory as $SHM, and running as root.
#
# Raw files: growth-SERIES-POINT.json (floor_rounds), growth.points (SERIES POINT BYTES),
# growth.check (SERIES POINT LABEL RC CHECK ALLOCATED-BYTES), growth.cmds,
# version-nbdcopy-1.22.txt (with nbdcopy-1.22).

# shellcheck source=bench/debian13_root.bash
. "$BENCH/debian13_root.bash" # D13ROOT, usable_root

if [ "$QUICK" = 1 ]; then
  GROWTH_FRAGMENTATION=(1G 2G)
  GROWTH_VIRTUAL_SIZE=(1G 1T)
else
  GROWTH_FRAGMENTATION=(1G 4G 16G)
  GROWTH_VIRTUAL_SIZE=(1G 16G 256G 4T 64T)
fi
GROWTH_LABELS=(ours nbdcopy) # nbdcopy-1.22 joins in run_growth_workload (growth_d13)

# growth_d13_unusable: why nbdcopy-1.22 cannot run here (nothing when it can).
growth_d13_unusable() {
  if [ "$(id -u)" != 0 ]; then
    echo "chroot needs root"
  elif ! usable_root "$D13ROOT"; then
    echo "no Debian 13 root with nbdcopy and mounted /dev and /proc at $D13ROOT (D13ROOT)"
  elif [ "$(stat -c %d:%i "$SHM")" != "$(stat -c %d:%i "$D13ROOT$SHM" 2>/dev/null)" ]; then
    echo "$D13ROOT$SHM is not $SHM (the root's /dev/shm must be this one, bind-mounted)"
  elif ! chroot "$D13ROOT" nbdcopy --version >/dev/null 2>&1; then
    echo "chroot $D13ROOT nbdcopy --version fails"
  fi
}

# growth_d13: adds nbdcopy-1.22 to GROWTH_LABELS as GROWTH_D13 says (see the top).
growth_d13() {
  local why
  [ "${GROWTH_D13:-}" = 0 ] && return 0
  why=$(growth_d13_unusable)
  if [ -n "$why" ]; then
    [ "${GROWTH_D13:-}" = 1 ] && die "growth: GROWTH_D13=1, but nbdcopy-1.22 cannot run: $why"
    echo "bench: growth: nbdcopy-1.22 left out: $why" >&2
    return 0
  fi
  GROWTH_LABELS+=(nbdcopy-1.22)
  chroot "$D13ROOT" nbdcopy --version >"$RAW/version-nbdcopy-1.22.txt" 2>&1 || true
}

# growth_source SERIES POINT FILE: writes the source image of one point.
growth_source() {
  local series=$1 point=$2 file=$3 bytes offset
  rm -f "$file"
  bytes=$(numfmt --from=iec "$point")
  case $series in
    fragmentation)
      # The peer writes it (qemu-img convert takes minutes over this many extents); every
      # copy is then checked against this file, not against the peer's own copy.
      nbdkit -r sparse-random "size=$point" percent=10 runlength=4096 seed=1 \
        --run "$(shjoin "$REF") \"\$uri\" $(shjoin "$file")" ||
        die "growth: could not write the $point sparse-random image"
      ;;
    virtual-size)
      truncate -s "$point" "$file"
      for offset in 0 $((bytes / 2)) $((bytes - 5)); do
        printf hello | dd of="$file" bs=1 seek="$offset" conv=notrunc status=none
      done
      ;;
    *) die "unknown growth series $series" ;;
  esac
  printf '%s\t%s\t%s\n' "$series" "$point" "$bytes" >>"$RAW/growth.points"
}

growth_cmd() { # LABEL SRC DST
  case $1 in
    ours) shjoin "$OURS" "$2" "$3" ;;
    nbdcopy) shjoin "$REF" "$2" "$3" ;;
    # SRC's socket and DST are on $SHM: the same paths inside the root.
    nbdcopy-1.22) shjoin chroot "$D13ROOT" nbdcopy "$2" "$3" ;;
    *) die "unknown growth copier $1" ;;
  esac
}

# One extra copy per label into a fresh file: exit status, then qemu-img compare against the
# source file (which reads both by their extents, so 64 TiB takes a second).
growth_check() { # SERIES POINT SRC-FILE URI DST
  local series=$1 point=$2 file=$3 src=$4 dst=$5 label rc check alloc
  for label in "${GROWTH_LABELS[@]}"; do
    rm -f "$dst"
    rc=0
    bash -c "$(growth_cmd "$label" "$src" "$dst")" >/dev/null 2>"$RAW/growth.$label.stderr" ||
      rc=$?
    alloc=0
    if [ "$rc" -ne 0 ]; then
      check="exit $rc"
    elif "$QEMU_IMG" compare -q -f raw -F raw "$file" "$dst" >/dev/null 2>&1; then
      check=identical
      alloc=$(($(stat -c '%b * %B' "$dst")))
    else
      check=DIFFERENT
    fi
    [ "$check" = identical ] || echo "bench: growth $series $point: $label check: $check" >&2
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$series" "$point" "$label" "$rc" "$check" "$alloc" \
      >>"$RAW/growth.check"
  done
  rm -f "$dst"
}

run_growth_workload() {
  local series point file="$SHM/growth.src.img" dst="$SHM/growth.dst.img" src label
  local -a args
  # The source's socket on $SHM, seen at the same path from the Debian 13 root (see the top);
  # local, so the other workloads' servers stay in $T.
  # shellcheck disable=SC2034 # read by run.sh's start_server, uri and stop_server
  local SOCKDIR=$SHM
  : >"$RAW/growth.points"
  : >"$RAW/growth.check"
  rm -f "$RAW/version-nbdcopy-1.22.txt"
  GROWTH_LABELS=(ours nbdcopy)
  growth_d13
  {
    printf 'server\tnbdkit -r file %s   # the source file of each point\n' "$file"
    if [[ " ${GROWTH_LABELS[*]} " == *" nbdcopy-1.22 "* ]]; then
      printf 'server\tDebian 13 root of nbdcopy-1.22: %s (its /dev/shm bind-mounted: %s, the same path inside)\n' \
        "$D13ROOT" "$SHM"
    fi
    for label in "${GROWTH_LABELS[@]}"; do
      printf '%s\t%s\n' "$label" "$(growth_cmd "$label" "$(uri growth-src)" "$dst")"
    done
  } >"$RAW/growth.cmds"
  local -a points
  for series in fragmentation virtual-size; do
    if [ "$series" = fragmentation ]; then
      points=("${GROWTH_FRAGMENTATION[@]}")
    else
      points=("${GROWTH_VIRTUAL_SIZE[@]}")
    fi
    for point in "${points[@]}"; do
      echo
      echo "=== growth: $series $point, alternating rounds: ${GROWTH_LABELS[*]} ==="
      growth_source "$series" "$point" "$file"
      start_server growth-src -r file "$file"
      src=$(uri growth-src)
      args=()
      for label in "${GROWTH_LABELS[@]}"; do
        args+=("$label" "$(growth_cmd "$label" "$src" "$dst")")
      done
      python3 "$BENCH/floor_rounds.py" "$RAW/growth-$series-$point.json" "$RUNS" "$WARMUP" \
        "rm -f $dst" "${args[@]}" || echo "bench: floor_rounds failed on growth $series $point" >&2
      growth_check "$series" "$point" "$file" "$src" "$dst"
      stop_server growth-src
      rm -f "$file"
    done
  done
}
