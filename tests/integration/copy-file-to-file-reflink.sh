#!/usr/bin/env bash
# File to file on a file system that shares blocks (XFS, btrfs): the data is
# cloned (FICLONERANGE), not copied: the bytes are the same, the copy's
# extents are shared with the source's, and -v counts them as cloned. Not
# with --blkhash (the bytes must be read) or --allocated, and not across file
# systems: those copy as before. Needs root to mount (skipped otherwise).
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_cmd filefrag

# (The shell reads the short -v output itself, and one cmp checks a copy:
# it fails on a missing file or another size as well as on other bytes.)

# copy ARGS...: run_copy for -v runs: stderr (a dozen lines) is kept in
# $T/cmd.err and shown; CLONED is the N of each " cloned=N" after
# "workers=" on its lines (the -v statistics; empty when there is none).
copy() {
    msg "run: nbdcopy $*"
    local rc=0 lines line rest
    "$NBDCOPY" "$@" 2>"$T/cmd.err" || rc=$?
    mapfile -t lines <"$T/cmd.err"
    ((${#lines[@]} == 0)) || printf '    stderr: %s\n' "${lines[@]:0:20}" >&2
    [[ $rc -eq 0 ]] || fail "nbdcopy $* exited with status $rc"
    CLONED=
    for line in "${lines[@]}"; do
        [[ $line == *workers=* ]] || continue
        rest=${line#*workers=}
        while [[ $rest =~ \ cloned=([0-9]*)(.*)$ ]]; do
            CLONED+=${CLONED:+ }${BASH_REMATCH[1]}
            rest=${BASH_REMATCH[2]}
        done
    done
}

# same EXPECTED ACTUAL WHAT: ACTUAL has EXPECTED's bytes, no more, no fewer.
same() {
    cmp -s "$1" "$2" || fail "$3: $(cmp "$1" "$2" 2>&1 | head -n 1)"
}

size=$((20 * MiB + 1234))
tested=0
for fs in xfs btrfs; do
  mnt=$T/mnt-$fs
  mount_fs "$fs" "$mnt" || continue
  tested=$((tested + 1))
  make_test_file "$mnt/src.img" "$size"
  sync

  for engine in parallel synchronous; do
    flags=(-v)
    [[ $engine == synchronous ]] && flags+=(--synchronous)
    msg "$fs, $engine"
    copy "${flags[@]}" "$mnt/src.img" "$mnt/$engine.img"
    same "$mnt/src.img" "$mnt/$engine.img" "$fs $engine copy"
    n=$CLONED
    ((n >= 20 * MiB / 2)) || fail "$fs $engine: cloned=${n:-missing}, expected the data"
    sync
    filefrag -v "$mnt/$engine.img" >"$T/frag.txt"
    grep -q shared "$T/frag.txt" ||
      fail "$fs $engine: no shared extent in the copy: $(sed -n 4p "$T/frag.txt")"
  done

  for option in --blkhash --allocated; do
    msg "$fs, $option: copied, not cloned"
    copy -v "$option" "$mnt/src.img" "$mnt/opt.img"
    same "$mnt/src.img" "$mnt/opt.img" "$fs $option copy"
    [[ $CLONED == 0 ]] || fail "$fs $option: cloned=$CLONED, expected 0"
    rm -f "$mnt/opt.img"
  done

  msg "$fs to another file system: copied"
  copy -v "$mnt/src.img" "$T/other.img"
  same "$mnt/src.img" "$T/other.img" "$fs to another file system"
  [[ $CLONED == 0 ]] || fail "$fs to another file system: cloned=$CLONED, expected 0"
  rm -f "$T/other.img"
done
((tested > 0)) || skip "no file system with shared blocks could be mounted"
msg PASS
