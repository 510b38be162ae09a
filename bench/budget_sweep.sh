#!/usr/bin/env bash
# bench/budget_sweep.sh: the adaptive budget's default against fixed budgets on slow
# devices, every command in the same alternating rounds (bench/floor_rounds.py --rotate).
#
#   bench/budget_sweep.sh [DEVICE...]      DEVICE: disk delay (default: both)
#
#   disk   nbdkit -r pattern $DISK_SIZE -> qemu-nbd -f raw --cache=none --aio=native on a
#          preallocated file in $DISKDIR (the disk, O_DIRECT): one qemu-nbd per run, on a
#          socket, exiting with its client; also ours as a user runs it ([ qemu-nbd ... ],
#          one connection) and qemu-img convert through the same qemu-nbd (what another
#          client of qemu-nbd gets) and straight into the file with -t none (no NBD at all)
#   delay  nbdkit -r pattern $DELAY_SIZE -> a fresh nbdkit --filter=delay memory with
#          delay-write=$DELAY_WRITE (a device whose every write takes a known time; where
#          root may, a loop device on a device-mapper delay target would be the same, but
#          this kernel has no device mapper)
#   memory nbdkit -r pattern $MEMORY_SIZE -> a fresh nbdkit memory (no device at all: the
#          servers' CPU sets the pace); also -C 1/2/8 and the two peers, to show whether any
#          setting of any client comes nearer the floor
#   slowread  nbdkit -r --filter=delay pattern $DELAY_SIZE delay-read=$DELAY_READ -> a fresh
#          nbdkit memory (a slow source), with the same extra commands
#
# Commands: ours with its defaults, and ours with fixed budgets: --requests R
# --request-size S --queue-size R*S for every R in $SWEEP_REQUESTS and S in $SWEEP_SIZES
# (the adaptive budget stays at or under --queue-size; with -v ours prints what it used).
# Environment: NEW (build/nbdcopy), RUNS (5), RAW (bench/out/budget-sweep), DISKDIR
# (bench/out/disk), DISK_SIZE (1G), DELAY_SIZE (512M), DELAY_WRITE (5ms),
# SWEEP_REQUESTS (4 16 64), SWEEP_SIZES (256K 1M 4M). Report: bench/report_sweep.py RAW.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$BENCH")
NEW=${NEW:-$TOP/build/nbdcopy}
RUNS=${RUNS:-5}
RAW=${RAW:-$BENCH/out/budget-sweep}
DISKDIR=${DISKDIR:-$BENCH/out/disk}
DISK_SIZE=${DISK_SIZE:-1G}
DELAY_SIZE=${DELAY_SIZE:-512M}
DELAY_WRITE=${DELAY_WRITE:-5ms}
DELAY_READ=${DELAY_READ:-10ms}
MEMORY_SIZE=${MEMORY_SIZE:-1G}
read -r -a SWEEP_REQUESTS <<<"${SWEEP_REQUESTS:-4 16 64}"
read -r -a SWEEP_SIZES <<<"${SWEEP_SIZES:-256K 1M 4M}"
DEVICES=("${@:-disk delay}")
read -r -a DEVICES <<<"${DEVICES[*]}"
mkdir -p "$RAW" "$DISKDIR"
T=$(mktemp -d "${TMPDIR:-/tmp}/nbdcopy-sweep.XXXXXX")
trap '[ -s "$T/src.pid" ] && kill "$(cat "$T/src.pid")"; rm -rf "$T"; rm -f "$DISKDIR/sweep.raw"' EXIT

bytes() { numfmt --from=iec "$1"; }

for dev in "${DEVICES[@]}"; do
  size=$DELAY_SIZE source=(pattern)
  case $dev in
    disk) size=$DISK_SIZE ;;
    memory) size=$MEMORY_SIZE ;;
    slowread) source=(--filter=delay pattern "delay-read=$DELAY_READ") ;;
  esac
  [ -s "$T/src.pid" ] && kill "$(cat "$T/src.pid")" && sleep 0.2
  rm -f "$T/src.pid" "$T/src.sock"
  nbdkit -U "$T/src.sock" -P "$T/src.pid" -r "${source[@]}" "size=$size"
  while [ ! -s "$T/src.pid" ]; do sleep 0.05; done
  src="nbd+unix:///?socket=$T/src.sock"
  dst='nbd+unix:///?socket={sock}'
  opts=(--rotate --also "$T/src.pid")
  prepare="" flush=""
  case $dev in
    disk)
      fallocate -l "$size" "$DISKDIR/sweep.raw"
      server="qemu-nbd -f raw --cache=none --aio=native -k {sock} $DISKDIR/sweep.raw"
      prepare=sync
      args=(default "$server ::: $NEW $src $dst"
        "default-[]" "$NEW -- $src [ qemu-nbd -f raw --cache=none --aio=native $DISKDIR/sweep.raw ]"
        "qemu-img-via-qemu-nbd" "$server ::: qemu-img convert -n -f raw -O raw $src $dst"
        "qemu-img-direct" "qemu-img convert -n -t none -f raw -O raw $src $DISKDIR/sweep.raw")
      ;;
    delay)
      server="nbdkit -f -U {sock} --filter=delay memory size=$size delay-write=$DELAY_WRITE"
      opts+=(--stop-server)
      flush="--flush "
      args=(default "$server ::: $NEW --flush $src $dst"
        "qemu-img" "$server ::: qemu-img convert -n -W -f raw -O raw $src $dst"
        "nbdcopy" "$server ::: /usr/bin/nbdcopy --flush $src $dst")
      ;;
    memory | slowread)
      server="nbdkit -f -U {sock} memory size=$size"
      opts+=(--stop-server)
      flush="--flush "
      args=(default "$server ::: $NEW --flush $src $dst"
        "qemu-img" "$server ::: qemu-img convert -n -W -f raw -O raw $src $dst"
        "nbdcopy" "$server ::: /usr/bin/nbdcopy --flush $src $dst")
      for c in 1 2 8; do args+=("C$c" "$server ::: $NEW --flush -C $c $src $dst"); done
      ;;
    *) echo "budget_sweep: unknown device $dev" >&2; exit 1 ;;
  esac
  for r in "${SWEEP_REQUESTS[@]}"; do
    for s in "${SWEEP_SIZES[@]}"; do
      q=$(($(bytes "$s") * r))
      args+=("R$r-$s" "$server ::: $NEW $flush--requests=$r --request-size=$s --queue-size=$q $src $dst")
    done
  done
  echo "=== $dev: $((${#args[@]} / 2)) commands, $RUNS rounds ===" >&2
  printf '%s\n' "$size" >"$RAW/$dev.size"
  : >"$RAW/$dev.cmds"
  for ((i = 0; i < ${#args[@]}; i += 2)); do
    printf '%s\t%s\n' "${args[i]}" "${args[i + 1]}" >>"$RAW/$dev.cmds"
  done
  python3 "$BENCH/floor_rounds.py" "${opts[@]}" "$RAW/$dev.json" "$RUNS" 1 "$prepare" "${args[@]}"
done
python3 "$BENCH/report_sweep.py" "$RAW"
