# shellcheck shell=bash
# bench/served_workloads.sh: the copies through a qemu-nbd that the copy starts itself
# ([ CMD ]), against their floor (sourced by bench/run.sh; uses its T, SHM, RAW, SIZE, OURS,
# REF, QEMU_IMG, RUNS, WARMUP, BENCH, start_server, stop_server, uri, shjoin, die and
# local_workloads.sh's build_fs_image).
#
#   qcow2-source   [ qemu-nbd -r -f qcow2 img.qcow2 ] -> file on tmpfs
#   file-to-qcow2  img.raw -> a fresh [ qemu-nbd -f qcow2 out.qcow2 ] (virt-v2v's output)
#   nbd-to-qcow2   nbdkit file img.raw -> a fresh [ qemu-nbd -f qcow2 out.qcow2 ]
#
# Labels: ours and nbdcopy as a user runs them ([ CMD ]), ours-split and nbdcopy-split the
# same copy with the same qemu-nbd started on a socket (bench/floor_rounds.py's
# SERVER ::: CLIENT form), so that the server's CPU, its main thread's and the copier's are
# known apart, and qemu-img convert doing the same in one process. qcow2-source also has
# null-split: ours reading the same qemu-nbd into null:, the least a client can add, which
# shows how near to the floor qemu-nbd itself lets any client come. Every command alternates
# round by round (bench/floor_rounds.py); PREPARE empties the destination before each.
#
# floor = max(qemu-nbd's main-thread CPU, (qemu-nbd's CPU + the copier's + the nbdkit
# source's) / 2): on two cores a copy can be no faster than its busiest thread or than half
# of all the CPU it needs; nbd-to-qcow2's nbdkit source, started once, is measured by
# floor_rounds.py --also (its CPU while each command runs). Raw files per workload W:
# W.json (floor_rounds), W.cmds, W.check (LABEL RC CHECK), W.size; the peak RSS is in
# W.json (floor_rounds takes it in every round).

# setup_served W: sets PREPARE, SERVER (qemu-nbd's argv without its socket option), OUT (the
# destination on tmpfs) and SRC_OPERAND (a file or URI; "" for the qcow2 source).
setup_served() {
  local w=$1
  : >"$T/servers.log"
  build_fs_image
  printf '%s\n' "${FS_DESC[@]}" >>"$T/servers.log"
  SIZE["$w"]=$FS_MIB
  case $w in
    qcow2-source)
      OUT=$SHM/$w.dst.img
      PREPARE="rm -f $OUT"
      SERVER=(qemu-nbd -r -f qcow2 "$FS_QCOW2")
      SRC_OPERAND=
      ;;
    file-to-qcow2 | nbd-to-qcow2)
      OUT=$SHM/$w.out.qcow2
      PREPARE="rm -f $OUT; $QEMU_IMG create -q -f qcow2 $OUT ${FS_MIB}M"
      echo "$PREPARE   # before every run" >>"$T/servers.log"
      SERVER=(qemu-nbd -f qcow2 "$OUT")
      SRC_OPERAND=$FS_RAW
      if [ "$w" = nbd-to-qcow2 ]; then
        start_server "$w-src" -r file "$FS_RAW"
        SRC_OPERAND=$(uri "$w-src")
      fi
      ;;
    *) die "unknown served workload $w" ;;
  esac
}

# served_cmd W LABEL: LABEL's command for floor_rounds.py (a shell string).
served_cmd() {
  local w=$1 label=$2 sock='nbd+unix:///?socket={sock}'
  local prog=$OURS
  case $label in nbdcopy*) prog=$REF ;; esac
  case $w:$label in
    qcow2-source:ours | qcow2-source:nbdcopy)
      shjoin "$prog" -- '[' "${SERVER[@]}" ']' "$OUT" ;;
    # The cheapest client: no destination, so qemu-nbd with next to nothing beside it.
    # (Before *-split, which would match it too.)
    qcow2-source:null-split)
      echo "$(shjoin "${SERVER[@]}") -k {sock} ::: $(shjoin "$prog" -C 1 "$sock" null:)" ;;
    # -C 1: the plan a [ CMD ] source gets (qemu-nbd -r offers multi-conn, -e 1 one client).
    qcow2-source:*-split)
      echo "$(shjoin "${SERVER[@]}") -k {sock} ::: $(shjoin "$prog" -C 1 "$sock" "$OUT")" ;;
    qcow2-source:qemu-img)
      shjoin "$QEMU_IMG" convert -f qcow2 -O raw "$FS_QCOW2" "$OUT" ;;
    *:ours | *:nbdcopy)
      shjoin "$prog" -- "$SRC_OPERAND" '[' "${SERVER[@]}" ']' ;;
    *:*-split)
      echo "$(shjoin "${SERVER[@]}") -k {sock} ::: $(shjoin "$prog" "$SRC_OPERAND" "$sock")" ;;
    *:qemu-img)
      shjoin "$QEMU_IMG" convert -f raw -O qcow2 "$SRC_OPERAND" "$OUT" ;;
    *) die "unknown served command $w $label" ;;
  esac
}

# served_labels W: the commands of W, in the order of every round.
served_labels() {
  case $1 in
    qcow2-source) echo ours ours-split null-split nbdcopy nbdcopy-split qemu-img ;;
    *) echo ours ours-split nbdcopy nbdcopy-split qemu-img ;;
  esac
}

# One extra run of each command as a user runs it, into a fresh destination: exit status and
# the destination against the source (cmp, or qemu-img compare -f raw -F qcow2).
served_check() { # W
  local w=$1 label rc check cmd
  : >"$RAW/$w.check"
  for label in ours nbdcopy qemu-img; do
    bash -c "$PREPARE"
    cmd=$(served_cmd "$w" "$label")
    rc=0
    bash -c "$cmd" >/dev/null 2>"$RAW/$w.$label.stderr" || rc=$?
    if [ "$rc" -ne 0 ]; then
      check="exit $rc"
    elif [ "$w" = qcow2-source ] && cmp -s "$FS_RAW" "$OUT"; then
      check=identical
    elif [ "$w" != qcow2-source ] &&
      "$QEMU_IMG" compare -q -f raw -F qcow2 "$FS_RAW" "$OUT" >/dev/null 2>&1; then
      check=identical
    else
      check=DIFFERENT
    fi
    [ "$check" = identical ] || echo "bench: $w: $label check: $check" >&2
    printf '%s\t%s\t%s\n' "$label" "$rc" "$check" >>"$RAW/$w.check"
  done
  rm -f "$OUT"
}

run_served_workload() {
  local w=$1 label
  setup_served "$w"
  echo
  echo "=== $w (${SIZE[$w]} MiB), alternating rounds with the CPU split ==="
  local -a args=()
  : >"$RAW/$w.cmds"
  while read -r line; do printf 'server\t%s\n' "$line" >>"$RAW/$w.cmds"; done <"$T/servers.log"
  for label in $(served_labels "$w"); do
    args+=("$label" "$(served_cmd "$w" "$label")")
    printf '%s\t%s\n' "$label" "$(served_cmd "$w" "$label")" >>"$RAW/$w.cmds"
  done
  local -a also=()
  if [ "$w" = nbd-to-qcow2 ]; then also=(--also "$T/$w-src.pid"); fi
  python3 "$BENCH/floor_rounds.py" "${also[@]}" "$RAW/$w.json" "$RUNS" "$WARMUP" "$PREPARE" \
    "${args[@]}" ||
    echo "bench: floor_rounds failed on $w" >&2
  served_check "$w"
  echo "${SIZE[$w]}" >"$RAW/$w.size"
  stop_server "$w-src"
  rm -f "$OUT"
}
