# shellcheck shell=bash
# bench/incremental_workload.sh: the incremental workload of bench/run.sh (sourced by it;
# uses its T, SHM, RAW, SIZE, OURS, REF, QEMU_IMG, TIME, QUICK, start_server, stop_server,
# shjoin, die).
#
# The image (cached in $INCCACHE, rebuilt when its key changes): a qcow2 of SIZE[incremental]
# MiB converted from nbdkit sparse-random percent=10 seed=1 (10 % data); bitmap b1 recording a
# contiguous rewrite of 1 % of the image at its middle, then disabled; old.raw, the full copy
# at that point; bitmap b0, then 1 % of the image rewritten in scattered 64 KiB clusters
# (seeded). Commands, side by side in one hyperfine run (labels, W.LABEL.* in $RAW):
#   incremental   ours --dirty-bitmap=b0  [ qemu-nbd -r -B b0 ... ] -> inc.img (the old copy)
#   contiguous    ours --dirty-bitmap=b1  the same 1 % as one contiguous range -> inc.img
#   ours-full     ours                    [ qemu-nbd -r ... ] -> full.img (new file)
#   nbdcopy-full  /usr/bin/nbdcopy        the same full copy
# Destinations on tmpfs; full.img is removed before every run. Copying the dirty ranges
# again onto inc.img writes the same bytes, so every run does the same work.

INCCACHE=${INCCACHE:-$BENCH/out/incremental}
INC_QCOW2='' INC_OLD='' INC_DESC=()

build_incremental_image() {
  local mib=${SIZE[incremental]} name key clusters contig_mib
  command -v qemu-io >/dev/null || die "qemu-io is missing (apt-get install qemu-utils)"
  name=incremental-$mib
  INC_QCOW2=$INCCACHE/$name.qcow2
  INC_OLD=$INCCACHE/$name.old.raw
  clusters=$((mib * 16 / 100))   # 1 % of the image in 64 KiB clusters
  contig_mib=$((clusters / 16))
  key="size=${mib}M clusters=$clusters seed=1 $("$QEMU_IMG" --version | sed -n 1p)"
  key+=" $(nbdkit --version | sed -n 1p) v2"
  INC_DESC=("nbdkit -r sparse-random size=${mib}M percent=10 seed=1 | qemu-img convert -O qcow2: img.qcow2"
    "qemu-img bitmap --add b1; qemu-io 'write ${contig_mib} MiB at the middle'; qemu-img bitmap --disable b1"
    "qemu-img convert -O raw img.qcow2 old.raw   # the previous full copy"
    "qemu-img bitmap --add b0; qemu-io: $clusters scattered 64 KiB clusters rewritten (seed 1)")
  mkdir -p "$INCCACHE"
  [ "$(cat "$INCCACHE/$name.key" 2>/dev/null)" = "$key" ] && [ -s "$INC_QCOW2" ] &&
    [ -s "$INC_OLD" ] && return 0
  echo "bench: building the incremental image (${mib} MiB, cached in $INCCACHE)"
  rm -f "$INC_QCOW2" "$INC_OLD" "$INCCACHE/$name.key"
  start_server inc-build -r sparse-random "size=${mib}M" percent=10 seed=1
  "$QEMU_IMG" convert -f raw -O qcow2 "nbd+unix:///?socket=$T/inc-build.sock" "$INC_QCOW2" ||
    die "qemu-img convert of the incremental image failed"
  stop_server inc-build
  "$QEMU_IMG" bitmap --add --enable "$INC_QCOW2" b1 || die "qemu-img bitmap failed"
  qemu-io -f qcow2 -c "write -P 0x5a $((mib / 2))M ${contig_mib}M" "$INC_QCOW2" >/dev/null ||
    die "qemu-io failed"
  "$QEMU_IMG" bitmap --disable "$INC_QCOW2" b1 || die "qemu-img bitmap failed"
  "$QEMU_IMG" convert -f qcow2 -O raw "$INC_QCOW2" "$INC_OLD" || die "qemu-img convert failed"
  "$QEMU_IMG" bitmap --add --enable "$INC_QCOW2" b0 || die "qemu-img bitmap failed"
  # Distinct random clusters anywhere in the image, each rewritten with its own pattern.
  python3 - "$mib" "$clusters" >"$T/inc-writes.txt" <<'PY'
import random, sys
mib, n = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(1)
for i, c in enumerate(sorted(rng.sample(range(mib * 16), n))):
    print(f"write -P {1 + i % 255} {c * 65536} 64k")
PY
  local -a args=()
  while read -r line; do args+=(-c "$line"); done <"$T/inc-writes.txt"
  qemu-io -f qcow2 "${args[@]}" "$INC_QCOW2" >/dev/null || die "qemu-io failed"
  echo "$key" >"$INCCACHE/$name.key"
}

# inc_argv LABEL DST [SOURCE-URI]: sets ARGV (SOURCE-URI: a served qemu-nbd instead of
# [ qemu-nbd ... ], for the peak-RSS run).
inc_argv() {
  local label=$1 dst=$2 bitmap=
  case $label in incremental) bitmap=b0 ;; contiguous) bitmap=b1 ;; esac
  local -a src=(-- '[' qemu-nbd -r ${bitmap:+-B "$bitmap"} -f qcow2 "$INC_QCOW2" ']')
  [ $# -gt 2 ] && src=("$3" --connections=1)
  case $label in
    incremental | contiguous) ARGV=("$OURS" "--dirty-bitmap=$bitmap" "${src[@]}" "$dst") ;;
    ours-full) ARGV=("$OURS" "${src[@]}" "$dst") ;;
    nbdcopy-full) ARGV=("$REF" "${src[@]}" "$dst") ;;
    *) die "unknown command $label" ;;
  esac
}

# One extra run per command outside hyperfine, from a served qemu-nbd (a copier reaps its
# [ CMD ] server, whose RSS /usr/bin/time would count): peak RSS, then the destination
# (incremental: onto a fresh copy of old.raw) against the image. W.check lines: LABEL RC CHECK.
inc_check() { # W LABEL...
  local w=$1 label dst rc check bitmap pid i
  shift
  : >"$RAW/$w.check"
  for label; do
    bitmap=
    case $label in incremental) bitmap=b0 ;; contiguous) bitmap=b1 ;; esac
    dst=$SHM/inc-check.img
    rm -f "$dst"
    [ -n "$bitmap" ] && cp --sparse=always "$INC_OLD" "$dst"
    rm -f "$T/inc.sock"
    qemu-nbd -r ${bitmap:+-B "$bitmap"} -f qcow2 -k "$T/inc.sock" "$INC_QCOW2" \
      >>"$T/nbdkit.log" 2>&1 &
    pid=$!
    for ((i = 0; i < 200; i++)); do [ -S "$T/inc.sock" ] && break; sleep 0.05; done
    inc_argv "$label" "$dst" "nbd+unix:///?socket=$T/inc.sock"
    rc=0
    "$TIME" -f %M -o "$RAW/$w.$label.rss" "${ARGV[@]}" >/dev/null \
      2>"$RAW/$w.$label.stderr" || rc=$?
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
      check="exit $rc"
    elif [ "$label" = contiguous ]; then
      check=n/a   # one range of the change set only: not a whole copy
    elif "$QEMU_IMG" compare -q -f raw -F qcow2 "$dst" "$INC_QCOW2" >/dev/null 2>&1; then
      check=identical
    else
      check=DIFFERENT
    fi
    [ "$check" = identical ] || [ "$check" = n/a ] || echo "bench: $w: $label check: $check" >&2
    printf '%s\t%s\t%s\n' "$label" "$rc" "$check" >>"$RAW/$w.check"
    rm -f "$dst"
  done
  # The dry run's figures: what the incremental copy moves.
  "$OURS" --dirty-bitmap=b0 -- '[' qemu-nbd -r -B b0 -f qcow2 "$INC_QCOW2" ']' null: \
    >"$RAW/$w.dirty" 2>>"$RAW/$w.incremental.stderr" || true
  "$OURS" --dirty-bitmap=b1 -- '[' qemu-nbd -r -B b1 -f qcow2 "$INC_QCOW2" ']' null: \
    >"$RAW/$w.dirty-contiguous" 2>>"$RAW/$w.contiguous.stderr" || true
}

run_incremental_workload() { # W
  local w=$1 label
  : >"$T/servers.log"
  build_incremental_image
  echo
  echo "=== $w (${SIZE[$w]} MiB) ==="
  local inc=$SHM/inc.img full=$SHM/full.img
  cp --sparse=always "$INC_OLD" "$inc"
  local -a labels=(incremental contiguous ours-full nbdcopy-full) hf=(--prepare "rm -f $full")
  : >"$RAW/$w.cmds"
  for line in "${INC_DESC[@]}"; do printf 'server\t%s\n' "$line" >>"$RAW/$w.cmds"; done
  for label in "${labels[@]}"; do
    case $label in *-full) inc_argv "$label" "$full" ;; *) inc_argv "$label" "$inc" ;; esac
    hf+=(-n "$label" "$(shjoin "${ARGV[@]}")")
    printf '%s\t%s\n' "$label" "$(shjoin "${ARGV[@]}")" >>"$RAW/$w.cmds"
  done
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --export-json "$RAW/$w.json" "${hf[@]}" || echo "bench: hyperfine failed on $w" >&2
  rm -f "$inc" "$full"
  inc_check "$w" "${labels[@]}"
  echo "${SIZE[$w]}" >"$RAW/$w.size"
}
