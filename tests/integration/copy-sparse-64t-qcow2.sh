#!/usr/bin/env bash
# A 64 TiB qcow2 holding 3 MiB + 64 KiB of data (the first MiB, a MiB at
# 1 TiB, 64 KiB at 33 TiB, the last MiB) copied through qemu-nbd with
# extended headers into a new 64 TiB qcow2 through qemu-nbd, with
# --destination-is-zero (what a conversion into a fresh image passes).
# What keeps it fast is the shape, asserted from --json (no timing here):
# exactly the data is read and written, in a handful of requests; the holes
# are skipped, never zeroed (a zero request per GiB would give the new
# qcow2 gigabytes of L2 tables); the block-status queries are a few dozen
# (64-bit replies, windows growing into the holes), not one per GiB
# (65,538 before: 3.7 s against 0.14 s). The destination then
# holds data at exactly those four ranges, with their bytes (qemu-img map,
# qemu-io read -P), and nothing else. Skips without extended headers
# (Debian 12: qemu 7.2, libnbd 1.14). Issue 43 measured this copy on
# Debian 13: docs/performance.md.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img qemu-nbd qemu-io

TiB=$((1024 * 1024 * MiB))
size=$((64 * TiB))
# offset length pattern
ranges=("0 $MiB 0x11" "$((1 * TiB)) $MiB 0x22" "$((33 * TiB)) 65536 0x33"
    "$((size - MiB)) $MiB 0x44")
data=0 writes=() checks=()
for r in "${ranges[@]}"; do
    read -r offset length pattern <<<"$r"
    data=$((data + length))
    writes+=(-c "write -q -P $pattern $offset $length")
    checks+=(-c "read -q -P $pattern $offset $length")
done
qemu-img create -q -f qcow2 "$T/src.qcow2" "$size"
qemu-io -f qcow2 "${writes[@]}" "$T/src.qcow2" >/dev/null || fail "qemu-io could not write the data"
qemu-img create -q -f qcow2 "$T/dst.qcow2" "$size"

start_qemu_nbd src -t --shared=0 -r -f qcow2 "$T/src.qcow2"
require_extended_headers "$(uri_for src)"
start_qemu_nbd dst -t --shared=0 -f qcow2 "$T/dst.qcow2"

run_copy --destination-is-zero --json="$T/report.json" "$(uri_for src)" "$(uri_for dst)"
stop_server dst

/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(*(r[k] for k in ("size", "bytes_read", "bytes_written", "bytes_zeroed", "bytes_skipped",
                       "requests", "extent_queries")))' "$T/report.json" >"$T/fields" ||
    fail "--json report unreadable: $(<"$T/report.json")"
read -r r_size r_read r_written r_zeroed r_skipped r_requests r_queries <"$T/fields"
msg "size=$r_size read=$r_read written=$r_written zeroed=$r_zeroed skipped=$r_skipped requests=$r_requests extent_queries=$r_queries"
[[ $r_size -eq $size ]] || fail "size $r_size, expected $size"
[[ $r_read -eq $data && $r_written -eq $data ]] ||
    fail "read $r_read and wrote $r_written bytes: expected exactly the $data bytes of data"
[[ $r_zeroed -eq 0 && $r_skipped -eq $((size - data)) ]] ||
    fail "holes: zeroed $r_zeroed, skipped $r_skipped: expected every hole skipped ($((size - data)))"
# Reads and writes of at least a qcow2 cluster (64 KiB) each.
((r_requests <= 2 * data / 65536)) ||
    fail "$r_requests requests for $data bytes of data: more than one read and one write per 64 KiB"
((r_queries <= 64)) ||
    fail "$r_queries block-status queries for 4 data ranges in 64 TiB: expected at most 64"

# The destination: data at exactly the four ranges, the rest unallocated
# (reads as zeroes: no backing file), and the bytes are the source's.
qemu-img map --output=json "$T/dst.qcow2" >"$T/map.json" || fail "qemu-img map failed"
mapfile -t allocated < <(/usr/bin/python3 -c 'import json, sys
for e in json.load(open(sys.argv[1])):
    if e["data"] or not e["zero"]:
        print(e["start"], e["length"])' "$T/map.json")
expected=()
for r in "${ranges[@]}"; do
    read -r offset length pattern <<<"$r"
    expected+=("$offset $length")
done
[[ ${allocated[*]} == "${expected[*]}" ]] ||
    fail "the destination's allocated ranges are '${allocated[*]}', expected '${expected[*]}'"
qemu-io -r -f qcow2 "${checks[@]}" "$T/dst.qcow2" >"$T/check.out" 2>&1 ||
    fail "the destination's data differs: $(<"$T/check.out")"
! grep -q "Pattern verification failed" "$T/check.out" ||
    fail "the destination's data differs: $(<"$T/check.out")"
msg PASS
