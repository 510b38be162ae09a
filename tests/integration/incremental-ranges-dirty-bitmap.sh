#!/usr/bin/env bash
# --ranges=FILE fed what "nbdinfo --map=qemu:dirty-bitmap:b0 --json" says of
# a qcow2 image with a persistent dirty bitmap (qemu-io changes made after
# "qemu-img bitmap --add"): with --ranges-type=1 (the dirty rows) the copy
# onto the old full copy equals the --dirty-bitmap copy and a fresh full
# copy made by qemu-img (cmp), except a marker planted in a clean range,
# which stays (without a marker: the whole image).  The list comes piped
# (--ranges=-) and from a file, and the source is an NBD URI, a
# "[ qemu-nbd ]" command and a raw file.  The dry run (null:) prints the
# same line as --dirty-bitmap's (and with --ranges-type=0, the clean rows,
# the complement's); -v names the list ("nbdcopy: ranges=FILE: dirty=..."
# and "read=... left alone (clean)=..."); -p counts the dirty bytes, not
# the image's; --json has the "ranges" object.  An NBD destination behind
# nbdkit's log filter sees Write and Zero requests only inside the dirty
# granules (the alignment here is 1: qemu-nbd and nbdkit's file plugin
# both take single bytes, so nothing grows; the granules are 64K-aligned
# anyway), covering all of them, and no Trim, in both engines.  Without
# --ranges-type the typed rows are refused, and a type no row has names
# no ranges.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"
require_cmd nbdkit nbdinfo python3
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)

size=$((24 * MiB + 4096))
img=$T/img.qcow2
prepare_changed_image "$img" "$size"  # old.raw, fresh.raw, DIRTY_*
cmp -s "$T/old.raw" "$T/fresh.raw" && fail "the changes changed nothing"
marker=$((17 * MiB))
want_line="dirty=$DIRTY_BYTES ranges=$DIRTY_COUNT clean=$((size - DIRTY_BYTES)) size=$size"
# -e 4: nbdinfo may still be saying goodbye when nbdcopy connects twice.
start_qemu_nbd src -r -B b0 -f qcow2 -e 4 -t "$img"
src=$(uri_for src)

# The list, and a check that it says what apply_changes changed.
nbdinfo --map=qemu:dirty-bitmap:b0 --json "$src" >"$T/map.json" ||
    fail "nbdinfo --map=qemu:dirty-bitmap:b0 failed"
got=$("$PY" - "$T/map.json" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["type"] == 1]
merged = []
for r in sorted(rows, key=lambda r: r["offset"]):
    if merged and r["offset"] == merged[-1][0] + merged[-1][1]:
        merged[-1][1] += r["length"]
    else:
        merged.append([r["offset"], r["length"]])
print(",".join(f"{o}+{n}" for o, n in merged))
PY
) || fail "cannot read $T/map.json"
[[ $got == "$DIRTY_RANGES" ]] || fail "nbdinfo's dirty rows are $got, expected $DIRTY_RANGES"

prepare() { # DST: the old full copy, with the marker in a clean range
    cp "$T/old.raw" "$1"
    plant_marker "$1" "$marker"
}

# The reference: --dirty-bitmap onto the old copy.
prepare "$T/bitmap.raw"
run_copy --dirty-bitmap=b0 "$src" "$T/bitmap.raw"
assert_incremental "$T/bitmap.raw" "$T/fresh.raw" "$marker" "--dirty-bitmap"

"$NBDCOPY" --dirty-bitmap=b0 "$src" null: >"$T/dry-bitmap.out" 2>&1 ||
    fail "--dirty-bitmap dry run failed: $(<"$T/dry-bitmap.out")"
[[ $(<"$T/dry-bitmap.out") == "$want_line" ]] ||
    fail "--dirty-bitmap dry run printed '$(<"$T/dry-bitmap.out")', expected '$want_line'"

msg "the dry run prints what --dirty-bitmap's prints"
"$NBDCOPY" --ranges="$T/map.json" --ranges-type=1 "$src" null: >"$T/dry.out" 2>"$T/dry.err" ||
    fail "--ranges dry run failed: $(<"$T/dry.err")"
[[ $(<"$T/dry.out") == "$want_line" ]] ||
    fail "--ranges dry run printed '$(<"$T/dry.out")', expected '$want_line'"
[[ ! -s $T/dry.err ]] || fail "the dry run wrote to stderr: $(<"$T/dry.err")"
# Type 0 (clean) is the complement: the selection is by type, exactly (as
# many clean runs as dirty: the first dirty one is not at 0, the last ends
# the image).
clean_line="dirty=$((size - DIRTY_BYTES)) ranges=$DIRTY_COUNT clean=$DIRTY_BYTES size=$size"
"$NBDCOPY" --ranges="$T/map.json" --ranges-type=0 "$src" null: >"$T/dry0.out" 2>"$T/dry.err" ||
    fail "--ranges-type=0 dry run failed: $(<"$T/dry.err")"
[[ $(<"$T/dry0.out") == "$clean_line" ]] ||
    fail "--ranges-type=0 dry run printed '$(<"$T/dry0.out")', expected '$clean_line'"

msg "piped: nbdinfo --map ... | nbdcopy --ranges=-"
prepare "$T/piped.raw"
nbdinfo --map=qemu:dirty-bitmap:b0 --json "$src" |
    "$NBDCOPY" -v -p --ranges=- --ranges-type=1 "$src" "$T/piped.raw" 2>"$T/piped.err" ||
    fail "the piped copy failed: $(grep -v '^nbdcopy: [a-z_]*=' "$T/piped.err" | head -n 3)"
assert_incremental "$T/piped.raw" "$T/fresh.raw" "$marker" "--ranges=- (piped)"
assert_same_file "$T/bitmap.raw" "$T/piped.raw" "--ranges=- against --dirty-bitmap"
grep -qxF "nbdcopy: ranges=-: $want_line" "$T/piped.err" ||
    fail "-v lacks 'nbdcopy: ranges=-: $want_line': $(grep 'ranges=' "$T/piped.err")"
grep -qE "^nbdcopy: ranges=-: read=[0-9]+ written=[0-9]+ zeroed=[0-9]+ left alone \(clean\)=$((size - DIRTY_BYTES))\$" \
    "$T/piped.err" || fail "-v lacks the read/written/zeroed/left alone line: $(grep 'ranges=' "$T/piped.err")"
zeroed=$(sed -n 's/^nbdcopy: ranges=-: .* zeroed=\([0-9]*\) .*/\1/p' "$T/piped.err")
((zeroed >= MiB + 262144 + 524288)) || fail "only $zeroed bytes zeroed: the new holes were skipped"

msg "from a file, -p: the total is the dirty size"
prepare "$T/listed.raw"
run_copy -p --json="$T/report.json" --ranges="$T/map.json" --ranges-type=1 "$src" "$T/listed.raw"
assert_same_file "$T/bitmap.raw" "$T/listed.raw" "--ranges=FILE against --dirty-bitmap"
prepare "$T/bitmap-p.raw"
"$NBDCOPY" -p --dirty-bitmap=b0 "$src" "$T/bitmap-p.raw" 2>"$T/bitmap-p.err" ||
    fail "--dirty-bitmap -p failed: $(tail -n 1 "$T/bitmap-p.err")"
# total ERRFILE: TOTAL is X of the last frame "█ 100% [***...] X of X, ...",
# empty when the last frame is not that (read by bash: no process).
total() {
    local lines
    TOTAL='' LAST=''
    mapfile -t lines <"$1"
    ((${#lines[@]} > 0)) || return 0
    LAST=${lines[-1]}
    if [[ $LAST =~ ^█\ 100%\ \[\*{40}\]\ ([^,]*)\ of\ ([^,]*),\  &&
          ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
        TOTAL=${BASH_REMATCH[1]}
    fi
}
total "$T/cmd.err"
ranges_total=$TOTAL
[[ -n $ranges_total ]] || fail "-p did not end at 100% with done = total: $LAST"
[[ $ranges_total != 24.0* ]] || fail "-p counts the whole image: $LAST"
total "$T/bitmap-p.err"
[[ $ranges_total == "$TOTAL" ]] ||
    fail "-p counts to $ranges_total, --dirty-bitmap's to $TOTAL"
"$PY" - "$T/report.json" "$T/map.json" "$DIRTY_BYTES" "$DIRTY_COUNT" "$size" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
path, dirty, count, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
want = {"file": path, "listed_bytes": dirty, "listed_ranges": count,
        "dirty_bytes": dirty, "ranges": count, "clean_bytes": size - dirty}
assert r["ranges"] == want, r["ranges"]
assert r["dirty_bitmap"] is None, r["dirty_bitmap"]
assert r["bytes_copied"] == dirty and r["size"] == size, (r["bytes_copied"], r["size"])
assert r["exit_status"] == 0 and r["error"] is None, r
PY
    fail "--json: wrong ranges figures: $(<"$T/report.json")"

msg "other sources: [ qemu-nbd ] without a bitmap, and a raw file"
cp "$T/old.raw" "$T/command.raw"  # no marker: all of it equals the fresh copy
run_copy --synchronous --ranges="$T/map.json" --ranges-type=1 \
    -- [ qemu-nbd -r -f qcow2 "$img" ] "$T/command.raw"
assert_same_file "$T/fresh.raw" "$T/command.raw" "[ qemu-nbd ] source"
prepare "$T/file.raw"
run_copy --ranges="$T/map.json" --ranges-type=1 "$T/fresh.raw" "$T/file.raw"
assert_same_file "$T/bitmap.raw" "$T/file.raw" "raw file source"

msg "an NBD destination behind the log filter"
run_case() { # NAME OPTIONS...
    local name=$1; shift
    local log=$T/$name.req
    prepare "$T/$name.raw"
    start_nbdkit dst --filter=log file "$T/$name.raw" logfile="$log"
    run_copy "$@" --ranges="$T/map.json" --ranges-type=1 "$src" "$(uri_for dst)"
    stop_server dst
    # One logtool start for every figure (sum and count are log_sum's and
    # log_count's).
    local figures outside unspanned zeroed trims writes written
    mapfile -t figures < <(logtool outranges "$log" Write,Zero,Trim "$DIRTY_RANGES" \
        -- unspanned "$log" Write,Zero "$DIRTY_RANGES" -- sum "$log" Zero \
        -- count "$log" Trim -- count "$log" Write -- sum "$log" Write)
    ((${#figures[@]} == 6)) || fail "$name: logtool failed on $log"
    read -r outside unspanned zeroed trims writes written <<<"${figures[*]}"
    msg "  $name: $writes writes ($written bytes), $zeroed bytes zeroed"
    ((writes > 0)) || fail "$name: no Write request in the log"
    [[ $outside -eq 0 ]] || fail "$name: $outside bytes written or zeroed outside the listed ranges"
    [[ $unspanned -eq 0 ]] || fail "$name: $unspanned listed bytes neither written nor zeroed"
    ((zeroed >= MiB + 262144 + 524288)) || fail "$name: only $zeroed bytes zeroed"
    [[ $trims -eq 0 ]] || fail "$name: $trims Trim requests"
    assert_incremental "$T/$name.raw" "$T/fresh.raw" "$marker" "$name"
    assert_same_file "$T/bitmap.raw" "$T/$name.raw" "$name against --dirty-bitmap"
}
run_case log-parallel -C 2
run_case log-synchronous --synchronous

msg "typed rows without --ranges-type, and a type no row has"
cp "$T/old.raw" "$T/dst.raw"
cp "$T/dst.raw" "$T/saved.raw"
expect_fail "$NBDCOPY" --ranges="$T/map.json" "$src" "$T/dst.raw"
want="nbdcopy: --ranges=$T/map.json: the rows have a \"type\", as an nbdinfo --map lists every kind of range of the image; choose the rows to copy with --ranges-type=N"
[[ $ERR == "$want" ]] || fail "expected '$want', got '$ERR'"
assert_unchanged "$T/dst.raw" "$T/saved.raw" "typed rows without --ranges-type"
expect_fail "$NBDCOPY" --ranges=- --ranges-type=7 "$src" "$T/dst.raw" <"$T/map.json"
want="nbdcopy: --ranges=-: no row has \"type\" 7: the list names no ranges to copy"
[[ $ERR == "$want" ]] || fail "expected '$want', got '$ERR'"
assert_unchanged "$T/dst.raw" "$T/saved.raw" "--ranges-type=7"
stop_server src
msg PASS
