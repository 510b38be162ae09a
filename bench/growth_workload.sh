# shellcheck shell=bash
# bench/growth_workload.sh: how the cost of a copy grows with the work (sourced by
# bench/run.sh; uses its T, SHM, RAW, OURS, REF, QEMU_IMG, RUNS, WARMUP, BENCH, QUICK,
# start_server, stop_server, uri, shjoin and die).
#
# Two series, each a source file on tmpfs served by `nbdkit -r file` and copied into a file
# on tmpfs by ours and by /usr/bin/nbdcopy, alternating round by round (bench/floor_rounds.py,
# which also takes each copy's peak RSS from wait4):
#
#   fragmentation  1, 4 and 16 GiB of nbdkit sparse-random (percent=10 runlength=4096
#                  seed=1): a tenth of the image is data in runs of about 4 KiB, so the
#                  extents grow with the size (about 52,000 data runs per GiB)
#   virtual-size   1 GiB to 64 TiB of holes with 5 bytes of data at the start, the middle and
#                  the end: the data stays the same while the size grows 65,536-fold
#
# Raw files: growth-SERIES-POINT.json (floor_rounds), growth.points (SERIES POINT BYTES),
# growth.check (SERIES POINT LABEL RC CHECK ALLOCATED-BYTES), growth.cmds.

if [ "$QUICK" = 1 ]; then
  GROWTH_FRAGMENTATION=(1G 2G)
  GROWTH_VIRTUAL_SIZE=(1G 1T)
else
  GROWTH_FRAGMENTATION=(1G 4G 16G)
  GROWTH_VIRTUAL_SIZE=(1G 16G 256G 4T 64T)
fi
GROWTH_LABELS=(ours nbdcopy)

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
  local prog=$OURS
  [ "$1" = nbdcopy ] && prog=$REF
  shjoin "$prog" "$2" "$3"
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
  : >"$RAW/growth.points"
  : >"$RAW/growth.check"
  {
    printf 'server\tnbdkit -r file %s   # the source file of each point\n' "$file"
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
      echo "=== growth: $series $point, alternating rounds ==="
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
