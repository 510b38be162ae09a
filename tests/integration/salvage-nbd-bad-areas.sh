#!/usr/bin/env bash
# --salvage against real servers with bad areas: nbdkit's ddrescue filter
# serves an image whose mapfile marks areas bad (every read touching one
# fails with EIO). Without --salvage the copy fails at the first bad byte, as
# before. With it, both engines: exit status 4, the copy equals the source
# outside the bad areas and holds zeroes inside (cmp against a file made
# with dd), one "unreadable" line per area with its exact offset and
# length (an area over several requests is one line), the same ranges in
# --json, the summary; --checksum is the rescued image's (sha256sum) and
# an expected one fails as a mismatch (3); --verify compares the rest; a
# stream source is refused before anything is written.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((16 * MiB))
# All data: a hole is not read (its extent says zeroes), so a bad area
# inside one is never met.
head -c "$size" /dev/urandom >"$T/src.img"
# expect_bad "OFFSET LENGTH"...: the bad areas of the next server, and
# the rescued image they make (the source with zeroes there, by dd).
expect_bad() {
    local area off len
    bad=("$@")
    lost=0
    cp "$T/src.img" "$T/rescued.img"
    for area in "${bad[@]}"; do
        read -r off len <<<"$area"
        dd if=/dev/zero of="$T/rescued.img" bs=512 seek=$((off / 512)) count=$((len / 512)) \
            conv=notrunc status=none
        lost=$((lost + len))
    done
    read -r rescued_sum _ < <(sha256sum "$T/rescued.img")
}

# check_rescue URI ENGINE-OPTIONS...: one --salvage copy, every promise.
check_rescue() {
    local uri=$1 rc=0 line i off len
    shift
    msg "salvage: $* from $uri"
    rm -f "$T/out.img" "$T/r.json"
    "$NBDCOPY" --salvage --checksum --json="$T/r.json" "$@" "$uri" "$T/out.img" \
        >"$T/sum.out" 2>"$T/cmd.err" || rc=$?
    _show_err "$T/cmd.err" 10
    [[ $rc -eq 4 ]] || fail "exit status $rc, expected 4"
    assert_same_file "$T/rescued.img" "$T/out.img" "rescued image"
    # (Found in any order by parallel workers: sorted by offset.)
    mapfile -t got < <(grep ': unreadable: ' "$T/cmd.err" | sort -t' ' -k5n)
    [[ ${#got[@]} -eq ${#bad[@]} ]] || fail "${#got[@]} unreadable lines, expected ${#bad[@]}"
    for ((i = 0; i < ${#bad[@]}; i++)); do
        read -r off len <<<"${bad[i]}"
        line="nbdcopy: $uri: unreadable: offset $off length $len: Input/output error"
        [[ ${got[i]} == "$line" ]] || fail "unreadable line '${got[i]}', expected '$line'"
    done
    line=$(tail -n 1 "$T/cmd.err")
    [[ $line == "nbdcopy: $uri: $lost bytes unreadable in ${#bad[@]} ranges ("*"% of $size bytes), written as zeroes: the destination is a rescued image, not a copy; the digests are of the rescued image" ]] ||
        fail "summary: $line"
    grep -q "^$rescued_sum  " "$T/sum.out" || fail "checksum: $(<"$T/sum.out"), expected $rescued_sum"
    python3 - "$T/r.json" "${bad[@]}" <<'PY' || fail "--json unreadable ranges"
import json, sys
r = json.load(open(sys.argv[1]))
want = [dict(zip(("offset", "length"), map(int, a.split()))) for a in sys.argv[2:]]
u = r["unreadable"]
assert u["ranges"] == want, u
assert u["bytes"] == sum(w["length"] for w in want) and r["exit_status"] == 4, r
PY
}

# nbdkit's ddrescue filter: one sector, 1 MiB + 2 sectors over request
# boundaries, the last 4 KiB bad.
expect_bad "1050112 512" "5241856 1049600" "16773120 4096"
{
    echo "0x0 +"
    pos=0
    for area in "${bad[@]}"; do
        read -r off len <<<"$area"
        printf '0x%x 0x%x +\n0x%x 0x%x -\n' "$pos" $((off - pos)) "$off" "$len"
        pos=$((off + len))
    done
    ((pos == size)) || printf '0x%x 0x%x +\n' "$pos" $((size - pos))
} >"$T/bad.map"
start_nbdkit bad -r --filter=ddrescue file "$T/src.img" ddrescue-mapfile="$T/bad.map"

msg "without --salvage the first bad byte fails the copy"
expect_fail "$NBDCOPY" "$(uri_for bad)" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for bad)"): read at offset [0-9]+ length [0-9]+: Input/output error\$"
check_rescue "$(uri_for bad)"
check_rescue "$(uri_for bad)" --synchronous

# (qemu-nbd, 7.2 and 10.0 alike, ends the connection when a read of its
# image fails, here through qemu's blkdebug driver: such a copy fails as a
# lost connection, with or without --salvage. Not a source to rescue from.)

msg "an expected checksum cannot match a rescued image"
read -r source_sum _ < <(sha256sum "$T/src.img")
for want in "$source_sum" "$rescued_sum"; do
    rc=0
    "$NBDCOPY" --salvage --checksum=sha256:"$want" "$(uri_for bad)" "$T/out.img" \
        2>"$T/cmd.err" >/dev/null || rc=$?
    [[ $rc -eq 3 ]] || fail "--checksum=sha256:$want: exit status $rc, expected 3"
    ERR=$(<"$T/cmd.err")
    if [[ $want == "$source_sum" ]]; then
        assert_err_contains "sha256 mismatch: expected $source_sum, got $rescued_sum"
    else  # (the digest a rescue predicted is still no proof of the source)
        assert_err_contains "--checksum: $(uri_for bad): $lost bytes could not be read (--salvage)"
    fi
done

msg "--verify compares what was read"
rc=0
"$NBDCOPY" --salvage --verify "$(uri_for bad)" "$T/out.img" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 4 ]] || fail "--verify: exit status $rc"
grep -qx "nbdcopy: --verify: $lost unreadable bytes were not compared" "$T/cmd.err" ||
    fail "--verify line missing: $(<"$T/cmd.err")"
assert_same_file "$T/rescued.img" "$T/out.img" "--verify's copy"
msg "a stream source is refused up front"
expect_fail "$NBDCOPY" --salvage - "$T/new.img" </dev/null
assert_err_contains "--salvage: -: a stream source cannot be read again around an unreadable range"
[[ ! -e $T/new.img ]] || fail "the destination was created"
msg PASS
