#!/usr/bin/env bash
# --dirty-bitmap with real qemu tools: a qcow2 image of odd size (not a
# multiple of the 64K bitmap granule), a full copy of it, then
# "qemu-img bitmap --add --enable" and qemu-io changes: data writes, write -z,
# write -z -u, discard, writes straddling granules, a small unaligned write,
# a write in the last partial granule.  The incremental copy onto the old
# full copy must equal a fresh full copy (cmp), except a marker planted in a
# clean range of the old copy, which must survive (nothing outside the dirty
# ranges is rewritten).  Cases: one connection ("[ qemu-nbd ]"), two
# connections (qemu-nbd -e 2 -t: multi-conn, -v shows workers=2),
# --synchronous, and --no-extents (holes inside dirty ranges are read, then
# found by zero detection).  -v reports the dirty size and range count, --progress=FD
# ends at 100/100, -p counts to the dirty size, --json has them too (bytes_copied = the dirty bytes), and
# null: is a dry run printing the same figures.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"

size=$((32 * MiB + 12800))
img=$T/img.qcow2
prepare_changed_image "$img" "$size"
cmp -s "$T/old.raw" "$T/fresh.raw" && fail "the changes changed nothing"

dirty=$DIRTY_BYTES
want_line="dirty=$dirty ranges=$DIRTY_COUNT clean=$((size - dirty)) size=$size"
marker=$((20 * MiB))

# Dry run: null: prints the figures, copies nothing.
"$NBDCOPY" --dirty-bitmap=b0 -- [ qemu-nbd -r -B b0 -f qcow2 "$img" ] null: \
    >"$T/dry.out" 2>"$T/dry.err" || fail "dry run failed: $(<"$T/dry.err")"
[[ $(<"$T/dry.out") == "$want_line" ]] ||
    fail "dry run printed '$(<"$T/dry.out")', expected '$want_line'"
[[ ! -s $T/dry.err ]] || fail "dry run wrote to stderr: $(<"$T/dry.err")"

prepare() { # DST: the old full copy, with the marker in a clean range
    cp "$T/old.raw" "$1"
    plant_marker "$1" "$marker"
}

# 1. One connection, the server started by nbdcopy; -v and --progress=FD.
prepare "$T/inc1.raw"
run_copy -v --progress=3 --json="$T/report.json" --dirty-bitmap=b0 \
    -- [ qemu-nbd -r -B b0 -f qcow2 "$img" ] "$T/inc1.raw" 3>"$T/progress.txt"
assert_incremental "$T/inc1.raw" "$T/fresh.raw" "$marker" "one connection"
grep -qxF "nbdcopy: dirty-bitmap=b0: $want_line" "$T/cmd.err" ||
    fail "-v lacks 'nbdcopy: dirty-bitmap=b0: $want_line'"
grep -qE "^nbdcopy: dirty-bitmap=b0: read=[0-9]+ written=[0-9]+ zeroed=[0-9]+ left alone \(clean\)=$((size - dirty))\$" \
    "$T/cmd.err" || fail "-v lacks the read/written/zeroed/clean line"
zeroed=$(sed -n 's/^nbdcopy: dirty-bitmap=b0: .* zeroed=\([0-9]*\) .*/\1/p' "$T/cmd.err")
((zeroed >= MiB + 262144 + 524288)) || fail "only $zeroed bytes zeroed: the new holes were skipped"
[[ $(tail -n 1 "$T/progress.txt") == 100/100 ]] || fail "--progress=FD did not end at 100/100"
python3 - "$T/report.json" "$dirty" "$size" <<'PY' || fail "--json lacks the dirty figures"
import json, sys
r = json.load(open(sys.argv[1]))
dirty, size = int(sys.argv[2]), int(sys.argv[3])
want = {"name": "b0", "dirty_bytes": dirty, "ranges": 8, "clean_bytes": size - dirty}
assert r["dirty_bitmap"] == want, r["dirty_bitmap"]
assert r["bytes_copied"] == dirty and r["size"] == size, (r["bytes_copied"], r["size"])
PY

# 2. Two connections to a multi-conn server.
start_qemu_nbd src -r -B b0 -f qcow2 -e 2 -t "$img"
prepare "$T/inc2.raw"
run_copy -v -C 2 -T 2 --dirty-bitmap=b0 "$(uri_for src)" "$T/inc2.raw"
assert_incremental "$T/inc2.raw" "$T/fresh.raw" "$marker" "two connections"
grep -q "^nbdcopy: workers=2 " "$T/cmd.err" || fail "expected 2 workers: $(grep workers= "$T/cmd.err")"

# 3. --synchronous.
prepare "$T/inc3.raw"
run_copy -p --synchronous --dirty-bitmap=b0 "$(uri_for src)" "$T/inc3.raw"
assert_incremental "$T/inc3.raw" "$T/fresh.raw" "$marker" "--synchronous"
# -p in a log: the total is the dirty size (2.07 MiB), not the image's (32.0 MiB).
grep -q "^█ 100% \[\*\{40\}\] 2.07 MiB of 2.07 MiB" "$T/cmd.err" ||
    fail "-p does not count the dirty bytes: $(tail -n 1 "$T/cmd.err")"

# 4. --no-extents: the bitmap is still asked for, zero ranges are not trusted.
prepare "$T/inc4.raw"
run_copy --no-extents --dirty-bitmap=b0 "$(uri_for src)" "$T/inc4.raw"
assert_incremental "$T/inc4.raw" "$T/fresh.raw" "$marker" "--no-extents"
stop_server src
msg PASS
