#!/usr/bin/env bash
# --salvage with --checkpoint=FILE: the unreadable ranges become bad areas
# ('-') of the ddrescue mapfile, exactly the injected ones (nbdkit's
# ddrescue filter); running the same command again reads only them: after
# part of the fault is lifted it recovers that part (exit 4, the mapfile
# keeps the rest bad, "recovered N of M"), after all of it the image is
# identical to the source, the mapfile has no bad area left (ddrescuelog
# -D exits 0) and the exit status is 0.
# labels: checkpoint
source "$(dirname "$0")/lib/lib.sh"
require_cmd ddrescuelog

size=$((8 * MiB))
head -c "$size" /dev/urandom >"$T/src.img"
uri=$(uri_for src)

# serve "OFFSET LENGTH"...: the source again, with these areas bad.
serve() {
    local area off len pos=0
    stop_server src
    {
        echo "0x0 +"
        for area in "$@"; do
            read -r off len <<<"$area"
            printf '0x%x 0x%x +\n0x%x 0x%x -\n' "$pos" $((off - pos)) "$off" "$len"
            pos=$((off + len))
        done
        printf '0x%x 0x%x +\n' "$pos" $((size - pos))
    } >"$T/fault.map"
    start_nbdkit src -r --filter=ddrescue file "$T/src.img" ddrescue-mapfile="$T/fault.map"
}

# bad_areas: the '-' blocks of our mapfile, "OFFSET LENGTH" in decimal.
bad_areas() {
    local pos len status
    while read -r pos len status; do
        [[ $pos != \#* && $status == - ]] && echo "$((pos)) $((len))"
    done <"$T/copy.map"
    return 0
}

# rescue STATUS: the same command every time; its exit status must be STATUS.
rescue() {
    local rc=0
    msg "rescue, expecting exit status $1"
    "$NBDCOPY" --salvage --checkpoint="$T/copy.map" --json="$T/r.json" "$uri" "$T/out.img" \
        2>"$T/cmd.err" || rc=$?
    _show_err "$T/cmd.err" 10
    [[ $rc -eq $1 ]] || fail "exit status $rc, expected $1"
}

serve "1049600 1024" "3145728 65536"
rescue 4
[[ $(bad_areas) == $'1049600 1024\n3145728 65536' ]] || fail "mapfile bad areas: $(bad_areas)"
ddrescuelog -t "$T/copy.map" | grep -q "bad-sector: *66560 B, *in *2 area" ||
    fail "ddrescuelog does not see the bad areas: $(ddrescuelog -t "$T/copy.map")"
ddrescuelog -D "$T/copy.map" && fail "ddrescuelog -D says a rescue with bad areas is finished"

msg "the source recovers the first area"
serve "3145728 65536"
rescue 4
[[ $(bad_areas) == "3145728 65536" ]] || fail "mapfile bad areas after recovery: $(bad_areas)"
grep -qx "nbdcopy: $uri: recovered 1024 bytes of the 66560 bytes in bad areas (65536 bytes still unreadable)" \
    "$T/cmd.err" || fail "no recovered line"
python3 - "$T/r.json" <<'PY' || fail "--json: $(<"$T/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["recovered"] == {"bad_area_bytes": 66560, "recovered_bytes": 1024}, r["recovered"]
assert r["unreadable"]["ranges"] == [{"offset": 3145728, "length": 65536}], r["unreadable"]
# Only the bad areas were copied again.
assert r["bytes_already_done"] == 8 * 2**20 - 66560 and r["bytes_read"] == 66560, r
PY

msg "the fault is lifted"
serve
rescue 0
assert_same_file "$T/src.img" "$T/out.img" "the rescued image, completed"
[[ -z $(bad_areas) ]] || fail "bad areas left: $(bad_areas)"
ddrescuelog -D "$T/copy.map" || fail "ddrescuelog -D: not finished"
grep -qx "nbdcopy: $uri: recovered 65536 bytes of the 65536 bytes in bad areas (0 bytes still unreadable)" \
    "$T/cmd.err" || fail "no recovered line"
msg PASS
