#!/usr/bin/env bash
# bench/run.sh: benchmark our nbdcopy against /usr/bin/nbdcopy and qemu-img convert.
#
# Usage: bench/run.sh                       full run, writes docs/performance.md + docs/*.png
#        QUICK=1 bench/run.sh               small sizes, smoke test (output in bench/out/quick/)
#        NBDCOPY=/usr/bin/nbdcopy bench/run.sh   use another binary as "ours"
#        WORKLOADS="blkhash-pattern blkhash-copy" SWEEP=0 bench/run.sh   a subset
#        WORKLOADS="checksum-pattern checksum-fsimage checksum-sparse" SWEEP=0 bench/run.sh
# Environment: see bench/README.md (NBDCOPY, QUICK, RUNS, WARMUP, SWEEP, SWEEP_RUNS, CONFIRM_RUNS,
# WORKLOADS, OUTDIR, RAW, TMPDIR, SHM, FSIMAGE_DIR, FSIMAGE_MIB, FSCACHE, DISKDIR, INCCACHE,
# GROWTH_D13, D13ROOT).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench

QUICK=${QUICK:-0}
RUNS=${RUNS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
WARMUP=${WARMUP:-1}
SWEEP=${SWEEP:-1}
SWEEP_RUNS=${SWEEP_RUNS:-$([ "$QUICK" = 1 ] && echo 2 || echo 3)}
SWEEP_WARMUP=${SWEEP_WARMUP:-$([ "$QUICK" = 1 ] && echo 0 || echo 1)}
CONFIRM_RUNS=${CONFIRM_RUNS:-$([ "$QUICK" = 1 ] && echo 3 || echo 11)}
WORKLOADS=${WORKLOADS:-pattern sparse zero latency sparsefile readnull \
  fragmented qcow2-to-file file-to-file file-to-block qcow2-source file-to-qcow2 nbd-to-qcow2 \
  blkhash-pattern blkhash-sparse blkhash-zero blkhash-copy checksum-pattern checksum-fsimage \
  checksum-sparse incremental growth}
if [ "$QUICK" = 1 ]; then
  OUTDIR=${OUTDIR:-$BENCH/out/quick}
  RAW=${RAW:-$BENCH/out/quick/raw}
else
  OUTDIR=${OUTDIR:-$ROOT/docs}
  RAW=${RAW:-$BENCH/out/raw}
fi

OURS=${NBDCOPY:-build/nbdcopy}
case $OURS in /*) ;; */*) OURS=$ROOT/$OURS ;; *) OURS=$(command -v "$OURS") ;; esac
REF=/usr/bin/nbdcopy
QEMU_IMG=$(command -v qemu-img)
TIME=/usr/bin/time

die() { echo "bench: $*" >&2; exit 1; }
for tool in hyperfine nbdkit qemu-img gnuplot python3; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs it)"
done
[ -x "$TIME" ] || die "$TIME is missing (apt-get install time)"
[ -x "$REF" ] || die "$REF is missing (apt-get install libnbd-bin)"
[ -x "$OURS" ] && "$OURS" --help >/dev/null 2>&1 ||
  die "ours ($OURS) does not run; build it or set NBDCOPY=/path/to/nbdcopy"

# Sizes in MiB per workload (qcow2-to-file and file-to-file: the file-system image's, set
# when it is built; growth: a series of sizes, bench/growth_workload.sh).
declare -A SIZE
if [ "$QUICK" = 1 ]; then
  SIZE=([pattern]=64 [sparse]=512 [zero]=1024 [latency]=16 [sparsefile]=128 [readnull]=64
    [fragmented]=128 [qcow2-to-file]=image [file-to-file]=image [file-to-block]=image
    [qcow2-source]=image [file-to-qcow2]=image [nbd-to-qcow2]=image
    [blkhash-pattern]=64 [blkhash-sparse]=512 [blkhash-zero]=1024 [blkhash-copy]=64
    [checksum-pattern]=64 [checksum-fsimage]=image [checksum-sparse]=512
    [incremental]=1024 [growth]=series)
else
  SIZE=([pattern]=1024 [sparse]=8192 [zero]=16384 [latency]=512 [sparsefile]=2048 [readnull]=1024
    [fragmented]=1024 [qcow2-to-file]=image [file-to-file]=image [file-to-block]=image
    [qcow2-source]=image [file-to-qcow2]=image [nbd-to-qcow2]=image
    [blkhash-pattern]=1024 [blkhash-sparse]=8192 [blkhash-zero]=16384 [blkhash-copy]=1024
    [checksum-pattern]=1024 [checksum-fsimage]=image [checksum-sparse]=8192
    [incremental]=16384 [growth]=series)
fi
for w in $WORKLOADS; do [ -n "${SIZE[$w]:-}" ] || die "unknown workload $w"; done

T=$(mktemp -d "${TMPDIR:-/tmp}/nbdbench.XXXXXX")
case $T in *[[:space:]]*) die "temporary directory path must not contain spaces: $T" ;; esac
case $OURS in *[[:space:]]*) die "the path of ours must not contain spaces: $OURS" ;; esac
# File destinations of the timed runs live on tmpfs: on a shared disk, the page-cache
# writeback of one run lands on whichever command runs next.
SHM=$(mktemp -d "${SHM:-/dev/shm}/nbdbench.XXXXXX")
case $SHM in *[[:space:]]*) die "the tmpfs directory path must not contain spaces: $SHM" ;; esac
case $BENCH in *[[:space:]]*) die "the bench directory path must not contain spaces: $BENCH" ;; esac
# Measure a copy, so that a rebuild during the run cannot mix two binaries.
OURS_ORIG=$OURS
mkdir "$T/bin"
cp "$OURS_ORIG" "$T/bin/nbdcopy"
OURS=$T/bin/nbdcopy
# Whether ours can checksum (how virt-v2v detects it); the blkhash-* workloads need it.
HAS_BLKHASH=0
case $("$OURS" --help 2>&1 || true) in *--blkhash*) HAS_BLKHASH=1 ;; esac

# ---- servers ----------------------------------------------------------------------
# Every server runs on a unix socket in $T with a pidfile; all are stopped at exit. A
# workload may put its sockets elsewhere with a local SOCKDIR (growth: on $SHM, which the
# Debian 13 root sees at the same path); the pid files stay in $T.
uri() { echo "nbd+unix:///?socket=${SOCKDIR:-$T}/$1.sock"; }

start_server() { # NAME NBDKIT-ARGS...
  local name=$1 sock; shift
  sock=${SOCKDIR:-$T}/$name.sock
  rm -f "$T/$name.pid" "$sock"
  echo "nbdkit -U $sock -P $T/$name.pid $*" >>"$T/servers.log"
  nbdkit --exit-with-parent -U "$sock" -P "$T/$name.pid" "$@" \
    >>"$T/nbdkit.log" 2>&1 &
  local i
  for ((i = 0; i < 200; i++)); do
    [ -s "$T/$name.pid" ] && [ -S "$sock" ] && return 0
    sleep 0.05
  done
  die "nbdkit $name did not start: $(tail -3 "$T/nbdkit.log")"
}

stop_server() { # NAME
  local pidfile=$T/$1.pid pid i
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  rm -f "$pidfile" "${SOCKDIR:-$T}/$1.sock"
}

cleanup() {
  local f
  for f in "$T"/*.pid; do
    [ -e "$f" ] && stop_server "$(basename "$f" .pid)"
  done
  # file-to-block's loop device, if a run stopped inside it.
  if [ -n "${BLOCK_BACKING:-}" ]; then
    losetup -j "$BLOCK_BACKING" -O NAME -n 2>/dev/null | xargs -r losetup -d 2>/dev/null || true
  fi
  rm -rf "$T" "$SHM"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- workloads --------------------------------------------------------------------
# setup_workload W: starts W's servers and sets
#   SRC      source operand          DST   destination operand
#   KIND     nbd | file | null | hash (a checksum of the source alone: DST is null:)
#   CMP      source to compare the destination with
#   SERVERS  the nbdkit commands (for the report)
setup_workload() {
  local w=$1 mib=${SIZE[$1]}
  : >"$T/servers.log"
  KIND=nbd
  case $w in
    pattern | readnull | blkhash-pattern | blkhash-copy)
      start_server "$w-src" -r pattern "size=${mib}M"
      SRC=$(uri "$w-src")
      CMP=$SRC
      if [ "$w" = readnull ]; then KIND=null; DST=null:; fi
      ;;
    sparse | blkhash-sparse)
      start_server "$w-src" -r sparse-random "size=${mib}M" percent=10 seed=1
      SRC=$(uri "$w-src")
      CMP=$SRC
      ;;
    zero | blkhash-zero)
      start_server "$w-src" -r null "size=${mib}M"
      SRC=$(uri "$w-src")
      CMP=$SRC
      ;;
    latency)
      start_server "$w-src" -r --filter=delay pattern "size=${mib}M" delay-read=10ms
      # Same bytes without the delay, only used to check the copies.
      start_server "$w-cmp" -r pattern "size=${mib}M"
      SRC=$(uri "$w-src")
      CMP=$(uri "$w-cmp")
      ;;
    sparsefile)
      KIND=file
      SRC=$T/sparse-src.img
      DST=$SHM/sparse-dst.img
      CMP=$SRC
      python3 "$BENCH/mksparse.py" "$SRC" "$mib" 1
      echo "python3 bench/mksparse.py $SRC $mib 1   # $((mib * 3 / 8)) MiB data in runs, rest holes" \
        >>"$T/servers.log"
      ;;
    *) die "unknown workload $w" ;;
  esac
  case $w in blkhash-pattern | blkhash-sparse | blkhash-zero) KIND='hash'; DST=null: ;; esac
  if [ "$KIND" = nbd ]; then
    start_server "$w-dst" memory "size=${mib}M"
    DST=$(uri "$w-dst")
  fi
}

stop_workload() {
  local w=$1
  stop_server "$w-src"; stop_server "$w-dst"; stop_server "$w-cmp"
  rm -f "$T/sparse-src.img" "$SHM/sparse-dst.img"
}

# cmd_for LABEL DST: the command line of LABEL copying $SRC to DST.
cmd_for() {
  local flush=
  [ "$KIND" = nbd ] && flush=" --flush"
  case $1 in
    ours) echo "$OURS$flush $SRC $2" ;;
    nbdcopy) echo "$REF$flush $SRC $2" ;;
    qemu-img)
      if [ "$KIND" = nbd ]; then
        echo "$QEMU_IMG convert -n -W -f raw -O raw $SRC $2"
      else
        echo "$QEMU_IMG convert -W -f raw -O raw $SRC $2"
      fi ;;
  esac
}

# One extra run per command, outside hyperfine: peak RSS with /usr/bin/time, then a check
# that the destination holds the source (into a fresh destination, so nothing left over
# from another command can hide a missing write).
rss_and_check() { # W LABEL
  local w=$1 label=$2 dst=$DST cmd rc check alloc=
  if [ "$KIND" = nbd ]; then
    start_server verify --filter=stats memory "size=${SIZE[$w]}M" \
      "statsfile=$RAW/$w.$label.stats"
    dst=$(uri verify)
  elif [ "$KIND" = file ]; then
    rm -f "$dst"
  fi
  cmd=$(cmd_for "$label" "$dst")
  local -a argv
  read -ra argv <<<"$cmd"
  rc=0
  "$TIME" -f %M -o "$RAW/$w.$label.rss" "${argv[@]}" >/dev/null 2>"$RAW/$w.$label.stderr" || rc=$?
  if [ "$rc" -ne 0 ]; then
    check="exit $rc"
  elif [ "$KIND" = null ]; then
    check=n/a
  elif "$QEMU_IMG" compare -q -f raw -F raw "$CMP" "$dst" >/dev/null 2>&1; then
    check=identical
  else
    check=DIFFERENT
  fi
  if [ "$KIND" = file ] && [ -e "$dst" ]; then
    alloc=$(($(stat -c '%b * %B' "$dst")))
  fi
  [ "$KIND" = nbd ] && stop_server verify   # writes the stats file
  printf '%s\t%s\t%s\t%s\n' "$label" "$rc" "$check" "$alloc" >>"$RAW/$w.check"
}

run_workload() {
  local w=$1 label
  echo
  echo "=== $w (${SIZE[$w]} MiB) ==="
  setup_workload "$w"
  local -a labels=(ours nbdcopy) hf=()
  [ "$KIND" != null ] && labels+=(qemu-img)
  [ "$KIND" = file ] && hf+=(--prepare "rm -f $DST")
  : >"$RAW/$w.cmds"
  while read -r line; do printf 'server\t%s\n' "$line" >>"$RAW/$w.cmds"; done <"$T/servers.log"
  for label in "${labels[@]}"; do
    hf+=(-n "$label" "$(cmd_for "$label" "$DST")")
    printf '%s\t%s\n' "$label" "$(cmd_for "$label" "$DST")" >>"$RAW/$w.cmds"
  done
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --export-json "$RAW/$w.json" "${hf[@]}" || echo "bench: hyperfine failed on $w" >&2
  : >"$RAW/$w.check"
  for label in "${labels[@]}"; do rss_and_check "$w" "$label"; done
  echo "${SIZE[$w]}" >"$RAW/$w.size"
  stop_workload "$w"
}

# ---- checksum workloads (blkhash-*) ----------------------------------------------
# blkhash-pattern/-sparse/-zero compare, on a source alone (KIND=hash):
#   blkhash    (a) ours --blkhash SRC null:       the checksum
#   sha256sum  (b) ours SRC - | sha256sum         the classic way: every byte through a pipe
#   nbdcopy    (c) /usr/bin/nbdcopy SRC null:     a plain read, no hash (all upstream 1.14 can do)
#   ours-null  (d) ours SRC null:                 a plain read, the base of the overhead target
# blkhash-copy copies pattern into nbdkit memory (KIND=nbd) with and without the checksum:
#   ours-blkhash   ours --flush --blkhash --blkhash-file=DIGEST SRC DST
#   ours           ours --flush SRC DST

# shjoin ARGS...: one command line that hyperfine -N (shell-words) splits back into ARGS.
shjoin() {
  local a out=
  for a; do
    if [[ $a =~ ^[][A-Za-z0-9_/.:=+,@%?-]+$ ]]; then
      out+="$a "
    else
      out+="'${a//\'/\'\\\'\'}' "
    fi
  done
  printf '%s' "${out% }"
}

# hash_argv LABEL DST DIGEST: sets ARGV to LABEL's command (DIGEST: --blkhash-file of the copy).
hash_argv() {
  case $1 in
    blkhash) ARGV=("$OURS" --blkhash "$SRC" null:) ;;
    # The only command that needs a shell; pipefail so that a failing nbdcopy counts.
    sha256sum) ARGV=(bash -c "set -o pipefail; $OURS \"$SRC\" - | sha256sum") ;;
    nbdcopy) ARGV=("$REF" "$SRC" null:) ;;
    ours-null) ARGV=("$OURS" "$SRC" null:) ;;
    ours-blkhash) ARGV=("$OURS" --flush --blkhash "--blkhash-file=$3" "$SRC" "$2") ;;
    ours) ARGV=("$OURS" --flush "$SRC" "$2") ;;
    *) die "unknown checksum command $1" ;;
  esac
}

is_digest() { [[ $1 =~ ^[0-9a-f]{64}$ ]]; }   # sha256, the default

# blkhash (sha256/64K) of SIZE zero bytes, computed here from the definition (see
# /work/shared/reference/blkhash.md): an independent reference for blkhash-zero.
zero_blkhash() { # SIZE
  python3 - "$1" <<'PY'
import hashlib, sys
size, block = int(sys.argv[1]), 65536
n, rest = divmod(size, block)
h = hashlib.sha256(hashlib.sha256(bytes(block)).digest() * n)
if rest:
    h.update(hashlib.sha256(bytes(rest)).digest())
h.update(size.to_bytes(8, "little"))
print(h.hexdigest())
PY
}

mismatch() { # W TEXT
  {
    echo
    echo "bench: ################################################################"
    echo "bench: ### MISMATCH on $1: $2"
    echo "bench: ################################################################"
    echo
  } >&2
}

# One extra run per command outside hyperfine: peak RSS, exit status, and the checks. The
# digest of (a) (or of the copy) must equal ours with --synchronous --blkhash SRC null:
# (one thread, synchronous requests: another code path); the copy's destination must also
# hold the source. W.check lines: LABEL RC NOTE OK(1/0).
hash_check() { # W LABEL...
  local w=$1 label rc note ok dst digest ref refnote='' expect=''
  shift
  : >"$RAW/$w.check"
  rc=0
  "$OURS" --synchronous --blkhash "$SRC" null: >"$RAW/$w.synchronous.digest" \
    2>"$RAW/$w.synchronous.stderr" || rc=$?
  ref=$(head -c 200 "$RAW/$w.synchronous.digest")
  if [ "$rc" -ne 0 ] || ! is_digest "$ref"; then
    mismatch "$w" "ours --synchronous --blkhash failed (exit $rc, output '$ref')"
    refnote="no reference: --synchronous exit $rc"
    ref=
  fi
  if [ "$w" = blkhash-zero ]; then
    expect=$(zero_blkhash $((${SIZE[$w]} << 20)))
    echo "$expect" >"$RAW/$w.expected.digest"
    if [ -n "$ref" ] && [ "$ref" != "$expect" ]; then
      mismatch "$w" "ours --synchronous gave $ref, the definition gives $expect"
      refnote="--synchronous ≠ expected $expect"
      ref=
    fi
  fi
  for label; do
    dst=$DST
    digest=/dev/null
    case $label in blkhash | ours-blkhash) digest=$RAW/$w.$label.digest ;; esac
    if [ "$KIND" = nbd ]; then
      start_server verify --filter=stats memory "size=${SIZE[$w]}M" \
        "statsfile=$RAW/$w.$label.stats"
      dst=$(uri verify)
    fi
    hash_argv "$label" "$dst" "$digest"
    rc=0
    if [ "$label" = blkhash ]; then
      "$TIME" -f %M -o "$RAW/$w.$label.rss" "${ARGV[@]}" >"$digest" \
        2>"$RAW/$w.$label.stderr" || rc=$?
    else
      "$TIME" -f %M -o "$RAW/$w.$label.rss" "${ARGV[@]}" >"$RAW/$w.$label.stdout" \
        2>"$RAW/$w.$label.stderr" || rc=$?
    fi
    note=ok ok=1
    if [ "$rc" -ne 0 ]; then
      note="exit $rc" ok=0
    elif [ "$KIND" = nbd ] &&
      ! "$QEMU_IMG" compare -q -f raw -F raw "$CMP" "$dst" >/dev/null 2>&1; then
      note=DIFFERENT ok=0
    elif [ "$KIND" = nbd ]; then
      note=identical
    fi
    [ "$KIND" = nbd ] && stop_server verify   # writes the stats file
    if [ "$digest" != /dev/null ] && [ "$rc" -eq 0 ]; then
      local got
      got=$(head -c 200 "$digest")
      if [ -z "$ref" ]; then
        note+=", digest unchecked ($refnote)" ok=0
      elif [ "$got" = "$ref" ]; then
        note+=", digest = --synchronous"
        [ -n "$expect" ] && note+=" = definition"
      else
        mismatch "$w" "$label gave '$got', ours --synchronous --blkhash gave $ref"
        note="MISMATCH: $got ≠ --synchronous $ref" ok=0
      fi
    fi
    [ "$ok" = 1 ] || echo "bench: $w: $label check: $note" >&2
    printf '%s\t%s\t%s\t%s\n' "$label" "$rc" "$note" "$ok" >>"$RAW/$w.check"
  done
}

run_hash_workload() {
  local w=$1 label
  echo
  echo "=== $w (${SIZE[$w]} MiB) ==="
  setup_workload "$w"
  local -a labels hf=() ARGV=()
  if [ "$KIND" = hash ]; then
    labels=(blkhash sha256sum nbdcopy ours-null)
  else
    labels=(ours-blkhash ours)
  fi
  : >"$RAW/$w.cmds"
  while read -r line; do printf 'server\t%s\n' "$line" >>"$RAW/$w.cmds"; done <"$T/servers.log"
  for label in "${labels[@]}"; do
    hash_argv "$label" "$DST" /dev/null
    hf+=(-n "$label" "$(shjoin "${ARGV[@]}")")
    printf '%s\t%s\n' "$label" "$(shjoin "${ARGV[@]}")" >>"$RAW/$w.cmds"
  done
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --export-json "$RAW/$w.json" "${hf[@]}" || echo "bench: hyperfine failed on $w" >&2
  hash_check "$w" "${labels[@]}"
  echo "${SIZE[$w]}" >"$RAW/$w.size"
  stop_workload "$w"
}

# What the shell and the pipe cost command (b) by themselves: the same bash -c with nothing
# to read.
run_shell_overhead() {
  echo
  echo "=== shell overhead of the sha256sum pipe ==="
  hyperfine -N -i --style basic --runs "$RUNS" --warmup "$WARMUP" \
    --export-json "$RAW/blkhash-shell.json" \
    -n shell "bash -c 'set -o pipefail; true | sha256sum'" ||
    echo "bench: hyperfine failed on the shell overhead" >&2
}

# The options that fix our data budget per worker at MIB MiB. --queue-size is the limit of
# the adaptive budget (it can still lower it down to one request).
budget_args() { echo "--queue-size=$(($1 * 1024 * 1024))"; }

# Sweep of our --requests and --queue-size on the pattern, latency and readnull workloads.
# The queue-size sweep also runs the default settings, side by side with the fixed budgets.
run_sweep() {
  local w=$1 r q
  echo
  echo "=== sweep on $w (${SIZE[$w]} MiB) ==="
  setup_workload "$w"
  echo "${SIZE[$w]}" >"$RAW/$w.size"
  local -a hf=()
  local flush=
  [ "$KIND" = nbd ] && flush=" --flush"
  for r in 1 2 4 8 16 64; do hf+=(-n "$r" "$OURS$flush --requests=$r $SRC $DST"); done
  hyperfine -N -i --style basic --runs "$SWEEP_RUNS" --warmup "$SWEEP_WARMUP" \
    --export-json "$RAW/sweep-$w-requests.json" "${hf[@]}" ||
    echo "bench: hyperfine failed on the requests sweep of $w" >&2
  hf=(-n default "$OURS$flush $SRC $DST")
  for q in 1 2 4 8 16; do
    hf+=(-n "$q" "$OURS$flush $(budget_args "$q") $SRC $DST")
  done
  hyperfine -N -i --style basic --runs "$SWEEP_RUNS" --warmup "$SWEEP_WARMUP" \
    --export-json "$RAW/sweep-$w-queue-size.json" "${hf[@]}" ||
    echo "bench: hyperfine failed on the queue-size sweep of $w" >&2
  confirm_budget "$w" "$flush"
  stop_workload "$w"
}

# The sweep's fastest --queue-size is the fastest of several noisy medians, so its own
# median is biased low. It is measured again, fresh, against the default settings, the
# two commands alternating round by round (bench/interleave.py) so that drift of the
# shared machine falls on both alike: RAW/confirm-W.json.
confirm_budget() { # W FLUSH
  local w=$1 flush=$2 best
  best=$(python3 - "$RAW/sweep-$w-queue-size.json" <<'PY'
import json, statistics, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError):
    sys.exit(0)
points = [(statistics.median(r["times"]), r["command"]) for r in results
          if r["command"] != "default" and not any(r.get("exit_codes") or [])]
print(min(points)[1] if points else "")
PY
)
  [ -n "$best" ] || return 0
  echo "--- $w: default against --queue-size=${best}M, alternating, $CONFIRM_RUNS runs each"
  python3 "$BENCH/interleave.py" "$RAW/confirm-$w.json" "$CONFIRM_RUNS" 1 \
    default "$OURS$flush $SRC $DST" "$best" "$OURS$flush $(budget_args "$best") $SRC $DST" ||
    echo "bench: the budget confirmation of $w failed" >&2
}

# fragmented, qcow2-to-file, file-to-file, file-to-block
# shellcheck source=bench/local_workloads.sh
. "$BENCH/local_workloads.sh"
# qcow2-source, file-to-qcow2, nbd-to-qcow2 (through qemu-nbd, against the floor)
# shellcheck source=bench/served_workloads.sh
. "$BENCH/served_workloads.sh"
# incremental (--dirty-bitmap)
# shellcheck source=bench/incremental_workload.sh
. "$BENCH/incremental_workload.sh"
# growth (fragmentation and virtual size against nbdcopy 1.14 and, by chroot, 1.22)
# shellcheck source=bench/growth_workload.sh
. "$BENCH/growth_workload.sh"
# checksum-* (--checksum against sha256sum and nbdcopy | sha256sum)
# shellcheck source=bench/checksum_workload.sh
. "$BENCH/checksum_workload.sh"

# ---- main -------------------------------------------------------------------------
rm -rf "$RAW"
mkdir -p "$RAW" "$OUTDIR"
start=$(date +%s)
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
  echo "quick=$QUICK"
  echo "runs=$RUNS"
  echo "warmup=$WARMUP"
  echo "sweep_runs=$SWEEP_RUNS"
  echo "sweep_warmup=$SWEEP_WARMUP"
  echo "confirm_runs=$CONFIRM_RUNS"
  echo "ours=$OURS_ORIG"
  echo "ours_copy=$OURS"
  echo "root=$ROOT"
  echo "tmp=$T"
  echo "shm=$SHM"
  echo "fsimage_dir=$FSIMAGE_DIR"
  echo "diskdir=$DISKDIR"
  echo "disk_fs=$(mkdir -p "$DISKDIR" && df --output=fstype,source "$DISKDIR" | tail -1 | xargs)"
  echo "nproc=$(nproc)"
  echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "kernel=$(uname -sr)"
  echo "mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "workloads=$WORKLOADS"
} >"$RAW/meta.txt"
"$OURS" -V >"$RAW/version-ours.txt" 2>&1 || true
"$REF" -V >"$RAW/version-nbdcopy.txt" 2>&1 || true
"$QEMU_IMG" --version 2>&1 | head -1 >"$RAW/version-qemu-img.txt" || true
nbdkit --version >"$RAW/version-nbdkit.txt" 2>&1 || true
hyperfine --version >"$RAW/version-hyperfine.txt" 2>&1 || true

echo "bench: ours = $OURS_ORIG (copied to $OURS); runs=$RUNS warmup=$WARMUP quick=$QUICK; raw results in $RAW"
hash_ran=0
for w in $WORKLOADS; do
  case $w in
    blkhash-*)
      if [ "$HAS_BLKHASH" = 1 ]; then
        run_hash_workload "$w"
        [ "$w" = blkhash-copy ] || hash_ran=1
      else
        echo "bench: skipping $w: $OURS_ORIG has no --blkhash" >&2
      fi ;;
    fragmented | qcow2-to-file | file-to-file | file-to-block) run_local_workload "$w" ;;
    qcow2-source | file-to-qcow2 | nbd-to-qcow2) run_served_workload "$w" ;;
    incremental) run_incremental_workload "$w" ;;
    growth) run_growth_workload ;;
    checksum-*) run_checksum_workload "$w" ;;
    *) run_workload "$w" ;;
  esac
done
[ "$hash_ran" = 1 ] && run_shell_overhead
if [ "$SWEEP" != 0 ]; then
  for w in pattern latency readnull; do run_sweep "$w"; done
fi
echo "elapsed=$(($(date +%s) - start))" >>"$RAW/meta.txt"

echo
python3 "$BENCH/report.py" "$RAW" "$OUTDIR"
echo "bench: took $(($(date +%s) - start)) s; report in $OUTDIR/performance.md"
