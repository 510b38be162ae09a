# shellcheck shell=bash
# bench/checksum_workload.sh: the --checksum workloads of bench/run.sh (sourced by it; uses
# its T, SHM, RAW, SIZE, OURS, REF, RUNS, WARMUP, QUICK, BENCH, start_server, stop_server,
# uri, build_fs_image, FS_RAW and die).
#
# Every workload runs its commands in alternating rounds (bench/floor_rounds.py: wall, CPU,
# peak RSS; the nbdkit source's CPU apart with --also; each round starting at another
# command, --rotate), side by side:
#
#   checksum-pattern  nbdkit -r pattern 1G      -> nbdkit memory 1G (--flush)
#   checksum-fsimage  the ext4 image (a copy on tmpfs) -> a new file on tmpfs
#       sum-copy      ours --checksum SRC DST             the copy and its digest
#       copy          ours SRC DST                        the plain copy
#       sha256sum     sha256sum FILE                      the same bytes from tmpfs: coreutils'
#                                                         one-core SHA, the target's floor
#       openssl       openssl dgst -sha256 FILE           libcrypto on one core (SHA-NI):
#                                                         the hash alone, shown
#       sum-null      ours --checksum SRC null:           the digest alone
#       nbdcopy-pipe  /usr/bin/nbdcopy SRC - | sha256sum  how callers do it today
#   checksum-sparse   nbdkit -r sparse-random 8G percent=10 seed=1: sum-null, nbdcopy-pipe and
#                     ours SRC null: (read-null); 90 % of it is zero runs, hashed unread.
#
# FILE is the source's bytes on tmpfs (pattern: written once by ours). Every digest printed
# by a command (the first round's) is checked against sha256sum of FILE: W.check lines
# LABEL DIGEST-OR-ERROR.

CHECKSUM_LABELS=(sum-copy copy sha256sum openssl sum-null nbdcopy-pipe)

# checksum_cmd W LABEL SRC DST FILE: the shell command of LABEL.
checksum_cmd() {
  local w=$1 label=$2 src=$3 dst=$4 file=$5 flush=
  [ "$w" = checksum-pattern ] && flush=--flush
  case $label in
    sum-copy) echo "$OURS $flush --checksum $src $dst" ;;
    copy) echo "$OURS $flush $src $dst" ;;
    sha256sum) echo "sha256sum $file" ;;
    openssl) echo "openssl dgst -sha256 $file" ;;
    sum-null) echo "$OURS --checksum $src null:" ;;
    nbdcopy-pipe) echo "bash -c 'set -o pipefail; $REF $src - | sha256sum'" ;;
    read-null) echo "$OURS $src null:" ;;
    *) die "unknown checksum command $label" ;;
  esac
}

# checksum_check W LABEL...: each LABEL's digest once more (stdout kept), against FILE's.
checksum_check() {
  local w=$1 src=$2 dst=$3 file=$4 want got label
  shift 4
  if [ -n "$file" ]; then
    want=$(sha256sum <"$file" | cut -d' ' -f1)
  else  # checksum-sparse: the reference is the copy /usr/bin/nbdcopy pipes
    want=$("$REF" "$src" - | sha256sum | cut -d' ' -f1)
  fi
  : >"$RAW/$w.check"
  for label; do
    case $label in copy | read-null) continue ;; esac
    got=$(sh -c "$(checksum_cmd "$w" "$label" "$src" "$dst" "$file")" 2>"$T/check.err" |
      sed -n '1s/^SHA2-256(.*)= //; 1s/ .*//; 1p') || got="failed"
    [ "$got" = "$want" ] || echo "bench: $w: $label printed '$got', sha256sum says $want" >&2
    printf '%s\t%s\t%s\n' "$label" "$got" "$want" >>"$RAW/$w.check"
  done
}

run_checksum_workload() { # W
  local w=$1 src dst file='' label prepare='' mib=${SIZE[$1]}
  local -a labels=("${CHECKSUM_LABELS[@]}") args
  case $w in
    checksum-pattern)
      start_server sum-src -r pattern "${mib}M"
      start_server sum-dst memory "${mib}M"
      src=$(uri sum-src) dst=$(uri sum-dst) file=$SHM/checksum-pattern.img
      "$OURS" "$src" "$file" || die "cannot write $file"
      printf 'server\tnbdkit -r pattern %sM (source), nbdkit memory %sM (destination)\n' \
        "$mib" "$mib" >"$RAW/$w.cmds" ;;
    checksum-fsimage)
      build_fs_image
      file=$SHM/checksum-fsimage.img dst=$SHM/checksum-fsimage.out
      cp --sparse=always "$FS_RAW" "$file"
      src=$file prepare="rm -f $dst"
      SIZE[$w]=$(($(stat -c %s "$file") >> 20))
      printf 'server\tnone: %s, a copy on tmpfs (%s MiB allocated)\n' "${FS_DESC[0]}" \
        "$(($(stat -c '%b * %B' "$file") >> 20))" >"$RAW/$w.cmds" ;;
    checksum-sparse)
      start_server sum-src -r sparse-random "${mib}M" percent=10 seed=1
      src=$(uri sum-src) dst=null:
      labels=(sum-null nbdcopy-pipe read-null)
      printf 'server\tnbdkit -r sparse-random %sM percent=10 seed=1\n' "$mib" >"$RAW/$w.cmds" ;;
    *) die "unknown workload $w" ;;
  esac
  args=()
  for label in "${labels[@]}"; do
    args+=("$label" "$(checksum_cmd "$w" "$label" "$src" "$dst" "$file")")
    printf '%s\t%s\n' "$label" "$(checksum_cmd "$w" "$label" "$src" "$dst" "$file")" \
      >>"$RAW/$w.cmds"
  done
  echo
  echo "=== $w: ${labels[*]}, alternating rounds ==="
  local -a also=()
  [ -s "$T/sum-src.pid" ] && also=(--also "$T/sum-src.pid")
  # --rotate: in a fixed order the command after the nbdcopy pipe (seconds long) found the
  # tmpfs pages it freed given back to the host, and paid a fault per page (1.66 s for
  # sum-copy on checksum-fsimage, 1.12 s in pairs with the plain copy).
  python3 "$BENCH/floor_rounds.py" --rotate "${also[@]}" "$RAW/$w.json" "$RUNS" "$WARMUP" "$prepare" \
    "${args[@]}" || echo "bench: floor_rounds failed on $w" >&2
  printf '%s\n' "${SIZE[$w]}" >"$RAW/$w.size"
  [ "$w" = checksum-fsimage ] && stat -c '%b %B' "$file" | awk '{print $1 * $2}' >"$RAW/$w.allocated"
  checksum_check "$w" "$src" "$dst" "$file" "${labels[@]}"
  stop_server sum-src
  stop_server sum-dst
  rm -f "$file" "$SHM/checksum-fsimage.out"
}
