#!/usr/bin/env bash
# --checkpoint knows a file operand by the file, not by how it is spelled:
# a copy begun as "a.raw" (killed after a checkpoint) resumes as "./a.raw"
# (killed again) and then as the absolute path, each run resuming what the
# last made durable ("resuming with N bytes done", N growing), and ends
# identical to the source. FILE records the canonical path
# (nbdcopy-source-file). A file without those lines (as older nbdcopy
# wrote it) resumes too, its typed name taken from the current directory.
# Still refused, before anything is written: a different file moved under
# the same name (by its fingerprint), and another file with the same bytes
# (naming both files).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd setsid pgrep realpath

size=$((8 * MiB))
make_random_file "$T/a.raw" "$size"  # all data: the rate paces it all
cp "$T/a.raw" "$T/a.orig"
R=$(realpath "$T")
cd "$T"
export NBDCOPY_CHECKPOINT_SECONDS=0.2
slow=(-v --synchronous --rate=2M --request-size=256K)

# resumed_bytes FILE: N of "resuming with N bytes done" in FILE (stderr of -v).
resumed_bytes() {
    sed -n 's/^nbdcopy: checkpoint=.*: resuming with \([0-9]*\) bytes done$/\1/p' "$1"
}

msg "begun as a.raw, killed after a checkpoint"
kill_after_checkpoint ck.map 0 copier "${slow[@]}" --checkpoint=ck.map a.raw out.raw
[[ $KILL_RC -eq 137 ]] || fail "the first copy finished before it was killed"
assert_map ck.map "the first run's FILE"
first=$MAP_DONE
((first > 0 && first < size)) || fail "the first run's FILE marks $first of $size bytes done"
grep -qxF "# nbdcopy-source-file: $R/a.raw" ck.map ||
    fail "FILE does not record the source's canonical path $R/a.raw: $(grep nbdcopy-source ck.map)"
grep -qxF "# nbdcopy-destination-file: $R/out.raw" ck.map ||
    fail "FILE does not record the destination's canonical path: $(grep nbdcopy-destination ck.map)"

msg "resumed as ./a.raw (and ./out.raw), killed again"
kill_after_checkpoint ck.map 0 copier "${slow[@]}" --checkpoint=ck.map ./a.raw ./out.raw
[[ $KILL_RC -eq 137 ]] || fail "the second copy finished before it was killed: $(cat kill.err)"
[[ $(resumed_bytes kill.err) -eq $first ]] ||
    fail "./a.raw did not resume the $first bytes done: $(cat kill.err)"
assert_map ck.map "the second run's FILE"
second=$MAP_DONE
((second > first && second < size)) || fail "the second run's FILE marks $second bytes done (first $first)"
cp ck.map ck.saved
cp out.raw out.saved

# refuse WORDS ARGS...: nbdcopy ARGS fails with one line containing WORDS,
# leaving FILE and the destination as they were.
refuse() {
    local words=$1
    shift
    expect_fail "$NBDCOPY" "$@"
    assert_err_contains "$words"
    cmp -s ck.map ck.saved || fail "FILE changed: nbdcopy $*"
    assert_unchanged out.raw out.saved "$*"
}

msg "a different file moved under the same name: refused by its fingerprint"
cp a.orig other.raw
printf 'another file!' | dd of=other.raw bs=1 seek=10 conv=notrunc status=none
mv a.raw a.kept
mv other.raw a.raw
refuse "the source's content differs from when the checkpoint was made" --checkpoint=ck.map a.raw out.raw
mv a.kept a.raw

msg "another file with the same bytes: refused, naming both files"
cp a.raw c.raw
words=$(ctool identity ck.map source)
[[ $words == ./a.raw ]] || fail "FILE names the source '$words', not as the last run typed it"
refuse "--checkpoint=ck.map: it was made for source './a.raw' ('$R/a.raw'), not 'c.raw' ('$R/c.raw')" \
    --checkpoint=ck.map c.raw out.raw

msg "a FILE without nbdcopy-*-file lines (an older nbdcopy's) resumes from its typed names"
sed -i '/^# nbdcopy-[a-z]*-file:/d' ck.map
grep -q -- '-file:' ck.map && fail "the -file lines are still in FILE"
kill_after_checkpoint ck.map 0 copier "${slow[@]}" --checkpoint=ck.map a.raw out.raw
[[ $(resumed_bytes kill.err) -eq $second ]] ||
    fail "an older FILE naming ./a.raw did not resume as a.raw: $(cat kill.err)"
assert_map ck.map "the third run's FILE"
third=$MAP_DONE

msg "finished as the absolute path"
"$NBDCOPY" "${slow[@]/--rate=2M/--rate=256M}" --checkpoint="$R/ck.map" "$R/a.raw" "$R/out.raw" \
    2>final.err || fail "the absolute path did not finish the copy: $(cat final.err)"
[[ $(resumed_bytes final.err) -ge $third && $(resumed_bytes final.err) -gt 0 ]] ||
    fail "the absolute path did not resume (third run's FILE: $third bytes): $(cat final.err)"
assert_same_file a.orig out.raw "the copy resumed under three spellings"
assert_map ck.map "the finished FILE"
((MAP_DONE == size)) || fail "the finished FILE marks $MAP_DONE of $size bytes"
exit 0
