#!/usr/bin/env bash
# A local file into a regular file: every write to the destination takes its
# inode lock, so a second worker's writes would only spin on it (issue 27).
# The copy runs one connection however many -C/-T ask for, and -v says why;
# the bytes are the same, holes stay holes and the allocated zeroes of the
# source become holes (zero detection still runs). An NBD source into the same
# file keeps its connections (the rule is for local sources only).
source "$(dirname "$0")/lib/lib.sh"

# connections: connections=N from the -v settings line of the last copy.
connections() { grep -o "nbdcopy: connections=[0-9]*" "$T/cmd.err" | cut -d= -f2; }
# allocated PATH: bytes the file system allocated to PATH.
allocated() { echo $(($(stat -c '%b * %B' "$1"))); }

mib=24
size=$((mib * MiB + 1234))
make_test_file "$T/src.img" "$size"

for engine in parallel synchronous; do
  flags=(-v -C 4 -T 4)
  [[ $engine == synchronous ]] && flags+=(--synchronous)
  msg "file to file, $engine"
  rm -f "$T/dst.img"
  run_copy "${flags[@]}" "$T/src.img" "$T/dst.img"
  assert_same_file "$T/src.img" "$T/dst.img" "$engine copy"
  [[ $(connections) == 1 ]] || fail "$engine: connections=$(connections), expected 1"
  # Each MiB holds 393293 random bytes, then 200000 allocated zeroes: only
  # the random bytes (rounded up to blocks) may be allocated in the copy.
  limit=$(((mib + 1) * (393293 + 2 * 4096)))
  got=$(allocated "$T/dst.img")
  ((got <= limit)) ||
    fail "$engine: $got bytes allocated in the copy, at most $limit expected (holes and zeroes kept out)"
  ((got < $(allocated "$T/src.img"))) || fail "$engine: the copy is no sparser than the source"
  [[ $engine == synchronous ]] && continue  # one connection anyway, nothing to say
  grep -q "nbdcopy: one connection: writes to $T/dst.img serialize on one lock and $T/src.img is local" \
    "$T/cmd.err" || fail "-v does not say why one connection: $(grep connection "$T/cmd.err")"
done

msg "an NBD source into a file keeps its connections"
start_nbdkit src -r file "$T/src.img"
rm -f "$T/dst.img"
run_copy -v -C 4 -T 4 "$(uri_for src)" "$T/dst.img"
assert_same_file "$T/src.img" "$T/dst.img" "NBD source copy"
[[ $(connections) == 4 ]] || fail "NBD source: connections=$(connections), expected 4"
grep -q "one connection" "$T/cmd.err" && fail "NBD source: -v says one connection"
msg PASS
