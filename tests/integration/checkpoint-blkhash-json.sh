#!/usr/bin/env bash
# What a resumed --checkpoint copy reports, and what it combines with:
# - --blkhash: killed (SIGKILL after a checkpoint), then resumed with
#   --blkhash, in both engines: the digest printed is the whole source's
#   (nbdcopy --blkhash SRC null:, and blkhash_reference.py), also on a
#   rerun of the finished copy;
# - --json's bytes_already_done is FILE's done ranges shrunk inward to the
#   copy's alignment (an end at the size kept): 1 for a file, 65536 with
#   --blkhash, 4096 for an NBD server whose minimum block is 4096, checked
#   on killed copies and on a FILE edited to unaligned ranges (while the
#   ranges not done hold garbage and holes of the source: rewritten, not
#   assumed zero); checkpoints >= 1;
# - --progress=FD on a resumed copy starts at the done fraction (its first
#   N/100 line), never goes back, ends at 100/100;
# - --verify on a resumed copy passes, in both engines, and --json's size
#   is the source's (a resumed --synchronous copy once verified, and
#   reported, only the bytes it wrote), and catches damage in a done range
#   (which the resumed copy leaves alone);
# - --dirty-bitmap: an incremental copy killed and resumed equals the
#   uninterrupted incremental copy (and a fresh full copy but for the
#   marker in a clean range); bytes_already_done is the dirty bytes FILE
#   marked done.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd nbdkit setsid pgrep

blkref() { # IMAGE: the sha256 blkhash digest, computed in Python
    local py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    "$py" -S "$TEST_LIB/blkhash_reference.py" "$1"  # (-S: the standard library is all it needs)
}

size=$((12 * MiB + 4096))
make_test_file "$T/src.img" "$size"
src=$T/src.img
ref=$(blkref "$src")
whole=$("$NBDCOPY" --blkhash "$src" null:) || fail "nbdcopy --blkhash SRC null: failed"
[[ $whole == "$ref" ]] || fail "nbdcopy --blkhash SRC null: says $whole, the reference $ref"
export NBDCOPY_CHECKPOINT_SECONDS=0.2

# killed MAP ARGS...: two SIGKILLs after checkpoints of nbdcopy ARGS.
killed() {
    local map=$1 i
    shift
    for i in 1 2; do
        kill_after_checkpoint "$map" 0.1 copier --rate=4M --request-size=256K "$@"
        [[ $KILL_RC -eq 137 ]] || fail "the copy finished before kill $i: nbdcopy $*"
    done
    assert_map "$map" "killed twice"
    ((MAP_DONE > 0 && MAP_DONE < size)) || fail "killed twice: $MAP_DONE of $size bytes done"
    cp "$map" "$map.before"
}

# check_report REPORT MAP-BEFORE ALIGNMENT WHAT [EXPR...]: bytes_already_done
# is the done bytes of MAP-BEFORE shrunk inward to ALIGNMENT; the copy
# finished.  Sets ALREADY (bytes_already_done) and REPORT_MORE (the values
# of the EXPRs on the report, as json_field prints them).  All of it is
# read by one python start.
check_report() {
    local report=$1 want got e more=()
    for e in "${@:5}"; do more+=(";" json "$report" "$e"); done
    ctool_lines donebytes "$2" "$3" ";" donebytes "$2" \
        ";" json "$report" 'r["bytes_already_done"]' ";" json "$report" 'r["exit_status"]' \
        ";" json "$report" 'r["checkpoints"]' "${more[@]}"
    want=${CTOOL[0]} got=${CTOOL[2]} ALREADY=${CTOOL[2]} REPORT_MORE=("${CTOOL[@]:5}")
    msg "$4: bytes_already_done $got (FILE: ${CTOOL[1]} done, $want at alignment $3)"
    ((want > 0)) || fail "$4: nothing done at alignment $3"
    [[ $got -eq $want ]] || fail "$4: bytes_already_done is $got, expected $want (alignment $3)"
    [[ ${CTOOL[3]} -eq 0 ]] || fail "$4: exit_status is not 0"
    ((CTOOL[4] >= 1)) || fail "$4: no checkpoint made"
}

# --- Killed without --blkhash, resumed with --blkhash --json (parallel).
map=$T/a.map
killed "$map" --checkpoint="$map" "$src" "$T/a.img"
"$NBDCOPY" --blkhash --json --checkpoint="$map" "$src" "$T/a.img" >"$T/a.json" ||
    fail "the resumed copy failed"
check_report "$T/a.json" "$map.before" 65536 "resumed with --blkhash" 'r["blkhash"]["digest"]'
[[ ${REPORT_MORE[0]} == "$ref" ]] ||
    fail "resumed with --blkhash: digest ${REPORT_MORE[0]}, expected $ref"
assert_same_file "$src" "$T/a.img" "resumed with --blkhash"

# --- Killed with --blkhash --synchronous, rerun the same command.
map=$T/b.map
killed "$map" --blkhash --synchronous --checkpoint="$map" "$src" "$T/b.img"
"$NBDCOPY" -v --blkhash --synchronous --checkpoint="$map" "$src" "$T/b.img" \
    >"$T/b.out" 2>"$T/b.err" || fail "the resumed --synchronous copy failed: $(tail -n 3 "$T/b.err")"
[[ $(<"$T/b.out") == "$ref" ]] || fail "resumed --synchronous --blkhash printed $(<"$T/b.out"), expected $ref"
done_at_64k=$(ctool donebytes "$map.before" 65536)
grep -qxF "nbdcopy: checkpoint=$map: resuming with $done_at_64k bytes done" "$T/b.err" ||
    fail "-v: $(grep resuming "$T/b.err"), FILE had $done_at_64k at 64 KiB"
assert_same_file "$src" "$T/b.img" "resumed --synchronous with --blkhash"
# The finished copy once more: nothing to write, the same digest.
cp "$T/b.img" "$T/b.saved"
out=$("$NBDCOPY" --blkhash --synchronous --checkpoint="$map" "$src" "$T/b.img") ||
    fail "the rerun of a finished --blkhash copy failed"
[[ $out == "$ref" ]] || fail "the rerun of a finished --blkhash copy printed $out, expected $ref"
assert_unchanged "$T/b.img" "$T/b.saved" "the rerun of a finished --blkhash copy"

# --- A FILE edited to unaligned done ranges; the rest of the destination
# holds garbage (the source has data and holes there).
edit() { # MAP DESTINATION-FILE [RANGES]: FILE marks RANGES done (by default
    # [100000, 3000000) and [3100001, size)), the rest of DESTINATION is garbage
    local ranges=${3:-100000+2900000,3100001+$((size - 3100001))}
    ctool rewrite "$1" "$ranges" "$1.edited"
    cp "$1.edited" "$1"
    cp "$1" "$1.before"
    cp "$src" "$2"
    write_random "$2" 0 "${ranges%%+*}"
    write_random "$2" 3000000 100001
}
map=$T/c.map
run_copy --checkpoint="$map" "$src" "$T/c.img"
for hash in "" --blkhash; do
    edit "$map" "$T/c.img"
    rm -f "$T/progress.txt"
    "$NBDCOPY" $hash --json --progress=3 --checkpoint="$map" "$src" "$T/c.img" \
        >"$T/c.json" 3>"$T/progress.txt" || fail "the resumed copy of an edited FILE ($hash) failed"
    alignment=1
    [[ -n $hash ]] && alignment=65536
    digest=()
    [[ -n $hash ]] && digest=('r["blkhash"]["digest"]')
    check_report "$T/c.json" "$map.before" "$alignment" "edited FILE ${hash:-(no --blkhash)}" "${digest[@]}"
    assert_same_file "$src" "$T/c.img" "edited FILE ${hash:-(no --blkhash)}"
    if [[ -n $hash ]]; then
        [[ ${REPORT_MORE[0]} == "$ref" ]] ||
            fail "edited FILE --blkhash: digest ${REPORT_MORE[0]}, expected $ref"
    fi
    # Progress starts at the done fraction and never goes back.
    already=$ALREADY
    mapfile -t lines <"$T/progress.txt"
    first=${lines[0]:-}
    [[ $first =~ ^([0-9]+)/100$ ]] || fail "--progress: first line '$first'"
    want=$((already * 100 / size))
    msg "--progress on a resumed copy starts at $first ($already of $size bytes done)"
    ((BASH_REMATCH[1] > 0)) || fail "--progress on a resumed copy starts at $first"
    ((BASH_REMATCH[1] >= want - 1 && BASH_REMATCH[1] <= want + 1)) ||
        fail "--progress on a resumed copy starts at $first, $want/100 was done"
    prev=0
    while IFS= read -r line; do
        [[ $line =~ ^([0-9]+)/100$ ]] || fail "--progress: malformed line '$line'"
        ((BASH_REMATCH[1] >= prev)) || fail "--progress went back from $prev to $line"
        prev=${BASH_REMATCH[1]}
    done <"$T/progress.txt"
    if ((${#lines[@]} == 0)) || [[ ${lines[-1]} != 100/100 ]]; then
        fail "--progress does not end at 100/100"
    fi
done

# --- An NBD destination whose minimum block size is 4096 (done runs that
# start on a 4096 boundary, as a copy onto it writes them, and end off one).
map=$T/d.map
truncate -s "$size" "$T/d.img"
start_nbdkit bs --filter=blocksize-policy file "$T/d.img" blocksize-minimum=4096 \
    blocksize-preferred=4096 blocksize-error-policy=error
run_copy --checkpoint="$map" "$src" "$(uri_for bs)"
edit "$map" "$T/d.img" "102400+2897600,3104768+$((size - 3104768))"
"$NBDCOPY" --json --checkpoint="$map" "$src" "$(uri_for bs)" >"$T/d.json" ||
    fail "the resumed copy onto a 4096-byte-block server failed"
check_report "$T/d.json" "$map.before" 4096 "NBD destination, 4096-byte blocks"
assert_same_file "$src" "$T/d.img" "NBD destination, 4096-byte blocks"

# --- --verify on a resumed copy: passes; catches damage in a done range.
map=$T/c.map
edit "$map" "$T/c.img"
"$NBDCOPY" --verify --json --checkpoint="$map" "$src" "$T/c.img" >"$T/v.json" ||
    fail "--verify on a resumed copy failed"
[[ $(json_field "$T/v.json" 'r["verify"]["match"]') == True ]] || fail "--verify: no match in the report"
assert_same_file "$src" "$T/c.img" "--verify on a resumed copy"
edit "$map" "$T/c.img"
"$NBDCOPY" --synchronous --verify --json --checkpoint="$map" "$src" "$T/c.img" >"$T/vs.json" 2>"$T/vs.err" ||
    fail "--verify on a resumed --synchronous copy failed: $(cat "$T/vs.err")"
ctool_lines json "$T/vs.json" 'r["verify"]["match"]' ";" json "$T/vs.json" 'r["size"]'
[[ ${CTOOL[0]} == True ]] || fail "--synchronous --verify: no match in the report"
[[ ${CTOOL[1]} == "$size" ]] ||
    fail "a resumed --synchronous copy reports size ${CTOOL[1]}, the source has $size"
assert_same_file "$src" "$T/c.img" "--verify on a resumed --synchronous copy"
edit "$map" "$T/c.img"
damage=$((6 * MiB + 12345))  # inside the done run [3100001, size), past its first 64 KiB
printf 'damaged!' | dd of="$T/c.img" bs=1 seek="$damage" conv=notrunc status=none
expect_fail "$NBDCOPY" --verify --checkpoint="$map" "$src" "$T/c.img"
damaged=$(blkref "$T/c.img")
[[ $ERR == "nbdcopy: --verify: $T/c.img: the destination does not match the source (blkhash $damaged differs from $ref)" ]] ||
    fail "--verify of a damaged resumed copy: $ERR"
[[ $(dd if="$T/c.img" bs=1 skip="$damage" count=8 status=none) == damaged! ]] ||
    fail "the resumed copy rewrote a range FILE marked done"

# --- --dirty-bitmap: killed, resumed, the same as uninterrupted.
source "$TEST_LIB/incremental_lib.bash"
isize=$((16 * MiB))
img=$T/img.qcow2
prepare_changed_image "$img" "$isize"
marker=$((15 * MiB))
plant_marker "$T/old.raw" "$marker"
start_qemu_nbd isrc -r -B b0 -f qcow2 -t "$img"
cp "$T/old.raw" "$T/plain.raw"
run_copy --dirty-bitmap=b0 "$(uri_for isrc)" "$T/plain.raw"
cp "$T/old.raw" "$T/inc.raw"
map=$T/inc.map
for i in 1 2 3; do
    kill_after_checkpoint "$map" 0.05 copier --rate=256K --request-size=64K \
        --dirty-bitmap=b0 --checkpoint="$map" "$(uri_for isrc)" "$T/inc.raw"
    assert_map "$map" "incremental, kill $i" ";" inside "$map" "$DIRTY_RANGES"
    if [[ $KILL_RC -ne 137 ]] || [[ ${MAP_MORE[0]} -eq $DIRTY_BYTES ]]; then
        ((i > 1)) || fail "the incremental copy finished before it could be killed"
        cp "$T/inc.saved.map" "$map"  # the FILE of the last kill
        cp "$T/inc.saved.raw" "$T/inc.raw"
        msg "incremental: finished before kill $i; resuming from kill $((i - 1))"
        break
    fi
    cp "$map" "$T/inc.saved.map"
    cp "$T/inc.raw" "$T/inc.saved.raw"
    dirty_done=${MAP_MORE[0]}  # (FILE's dirty bytes done: inc.saved.map's too)
done
cp "$map" "$map.before"
msg "incremental: FILE marks $dirty_done of $DIRTY_BYTES dirty bytes done"
((dirty_done > 0 && dirty_done < DIRTY_BYTES)) || fail "incremental: $dirty_done dirty bytes done"
"$NBDCOPY" --json --dirty-bitmap=b0 --checkpoint="$map" "$(uri_for isrc)" "$T/inc.raw" >"$T/inc.json" ||
    fail "the resumed incremental copy failed"
assert_map "$map" "incremental, resumed" ";" json "$T/inc.json" 'r["bytes_already_done"]'
[[ ${MAP_MORE[0]} -eq $dirty_done ]] ||
    fail "incremental: bytes_already_done ${MAP_MORE[0]}, expected $dirty_done"
[[ $MAP_DONE -eq $isize ]] || fail "incremental: the resumed copy leaves $MAP_DONE of $isize done"
assert_same_file "$T/plain.raw" "$T/inc.raw" "incremental, killed and resumed"
assert_incremental "$T/inc.raw" "$T/fresh.raw" "$marker" "incremental, killed and resumed"

# --- Last: FILE's done runs start off the 4096-byte blocks of the NBD
# destination (an edited FILE, or one the server's block size changed
# under): resumed as with a file, the done ranges shrunk inward to 4096.
map=$T/d.map
edit "$map" "$T/d.img"
"$NBDCOPY" --json --checkpoint="$map" "$src" "$(uri_for bs)" >"$T/d.json" 2>"$T/d.err" ||
    fail "resuming onto a 4096-byte-block server from unaligned done runs failed: $(cat "$T/d.err")"
check_report "$T/d.json" "$map.before" 4096 "NBD destination, unaligned done runs"
assert_same_file "$src" "$T/d.img" "NBD destination, unaligned done runs"
msg PASS
