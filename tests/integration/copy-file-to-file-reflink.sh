#!/usr/bin/env bash
# File to file on a file system that shares blocks (XFS, btrfs): the data is
# cloned (FICLONERANGE), not copied: the bytes are the same, the copy's
# extents are shared with the source's, and -v counts them as cloned. Not
# with --blkhash (the bytes must be read) or --allocated, and not across file
# systems: those copy as before. Needs root to mount (skipped otherwise).
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_cmd filefrag

# cloned: cloned=N from the -v statistics of the last copy.
cloned() { grep -o "workers=.*" "$T/cmd.err" | grep -o " cloned=[0-9]*" | cut -d= -f2 || true; }

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
    run_copy "${flags[@]}" "$mnt/src.img" "$mnt/$engine.img"
    assert_same_file "$mnt/src.img" "$mnt/$engine.img" "$fs $engine copy"
    n=$(cloned)
    ((n >= 20 * MiB / 2)) || fail "$fs $engine: cloned=${n:-missing}, expected the data"
    sync
    filefrag -v "$mnt/$engine.img" >"$T/frag.txt"
    grep -q shared "$T/frag.txt" ||
      fail "$fs $engine: no shared extent in the copy: $(sed -n 4p "$T/frag.txt")"
  done

  for option in --blkhash --allocated; do
    msg "$fs, $option: copied, not cloned"
    run_copy -v "$option" "$mnt/src.img" "$mnt/opt.img"
    assert_same_file "$mnt/src.img" "$mnt/opt.img" "$fs $option copy"
    [[ $(cloned) == 0 ]] || fail "$fs $option: cloned=$(cloned), expected 0"
    rm -f "$mnt/opt.img"
  done

  msg "$fs to another file system: copied"
  run_copy -v "$mnt/src.img" "$T/other.img"
  assert_same_file "$mnt/src.img" "$T/other.img" "$fs to another file system"
  [[ $(cloned) == 0 ]] || fail "$fs to another file system: cloned=$(cloned), expected 0"
  rm -f "$T/other.img"
done
((tested > 0)) || skip "no file system with shared blocks could be mounted"
msg PASS
