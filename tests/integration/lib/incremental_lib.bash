# Helpers for the incremental-*.sh tests (--dirty-bitmap): a qcow2 image,
# its full copy, a dirty bitmap and qemu-io changes.  Source after lib.sh.

require_cmd qemu-img qemu-io qemu-nbd

GRAN=65536  # qemu's default bitmap granularity for 64K clusters

# make_image QCOW2 SIZE: data, holes and allocated zeroes (make_test_file),
# as a qcow2 image.
make_image() {
    make_test_file "$T/base.raw" "$2"
    qemu-img convert -f raw -O qcow2 "$T/base.raw" "$1" || fail "qemu-img convert failed"
    rm -f "$T/base.raw"
}

# full_copy QCOW2 RAW: a full copy made by qemu-img (not by the tool under
# test), the reference an incremental copy must end up equal to.
full_copy() {
    [[ ! -e $2 ]] || rm -f "$2"
    qemu-img convert -f qcow2 -O raw "$1" "$2" || fail "qemu-img convert $1 failed"
}

add_bitmap() { # QCOW2 NAME
    qemu-img bitmap --add --enable "$1" "$2" || fail "qemu-img bitmap --add $2 failed"
}

# qio QCOW2 COMMAND...: each argument one qemu-io command.
qio() {
    local img=$1 args=() c
    shift
    for c in "$@"; do args+=(-c "$c"); done
    qemu-io -f qcow2 "${args[@]}" "$img" >"$T/qemu-io.log" 2>&1 ||
        fail "qemu-io failed: $(<"$T/qemu-io.log")"
    local log
    log=$(<"$T/qemu-io.log")
    log=${log,,}  # (grep -qi 'error\|failed', read by bash)
    [[ $log != *error* && $log != *failed* ]] || fail "qemu-io: $(<"$T/qemu-io.log")"
}

# plant_marker FILE OFFSET: 512 bytes no source holds ("untouched-marker"
# 32 times, kept in $T/marker.bin), in a range the bitmap calls clean; an
# incremental copy must leave them there (a full copy would overwrite them).
printf 'untouched-marker%.0s' {1..32} >"$T/marker.bin"
plant_marker() {
    dd if="$T/marker.bin" of="$1" bs=512 count=1 seek="$2" oflag=seek_bytes conv=notrunc \
        status=none || fail "could not plant the marker in $1"
}

# assert_incremental RESULT FRESH MARKER-OFFSET WHAT: RESULT equals FRESH
# (a fresh full copy) except for the 512-byte marker, still in place (the
# 512 bytes there are exactly the marker's).
assert_incremental() {
    local result=$1 fresh=$2 marker=$3 what=$4 sizes
    sizes=$(stat -c %s "$result" "$fresh") || fail "$what: cannot stat $result or $fresh"
    [[ ${sizes%$'\n'*} -eq ${sizes#*$'\n'} ]] || fail "$what: size changed"
    cmp -s -n "$marker" "$result" "$fresh" ||
        fail "$what: differs before the marker ($(cmp -n "$marker" "$result" "$fresh" 2>&1 | head -1))"
    cmp -s -i $((marker + 512)) "$result" "$fresh" ||
        fail "$what: differs after the marker ($(cmp -i $((marker + 512)) "$result" "$fresh" 2>&1 | head -1))"
    cmp -s -i "$marker:0" -n 512 "$result" "$T/marker.bin" ||
        fail "$what: the clean range holding the marker was rewritten"
}

# apply_changes QCOW2 SIZE: the standard set of changes (data writes,
# write -z, write -z -u, discard, a write straddling two granules, a small
# unaligned write, a write into a hole, a write in the last partial granule
# when SIZE is not a multiple of GRAN).  Sets DIRTY_RANGES ("OFF+LEN,..."),
# DIRTY_BYTES and DIRTY_COUNT: the granules they touch.
apply_changes() {
    local img=$1 size=$2
    qio "$img" \
        "write -P 0x11 $((1 * MiB)) 64k" \
        "write -P 0x22 $((3 * MiB - 4096)) 8k" \
        "write -z $((5 * MiB)) 1M" \
        "write -z -u $((7 * MiB)) 256k" \
        "discard $((9 * MiB)) 512k" \
        "write -P 0x33 $((11 * MiB + 100)) 1000" \
        "write -P 0x55 $((13 * MiB + 400000)) 50000" \
        "write -P 0x44 $((size - 1000)) 1000"
    local last=$(((size - 1000) / GRAN * GRAN))
    DIRTY_RANGES="$((1 * MiB))+65536,$((3 * MiB - GRAN))+131072,$((5 * MiB))+$MiB"
    DIRTY_RANGES+=",$((7 * MiB))+262144,$((9 * MiB))+524288,$((11 * MiB))+65536"
    DIRTY_RANGES+=",$(((13 * MiB + 400000) / GRAN * GRAN))+65536,$last+$((size - last))"
    DIRTY_BYTES=$((65536 + 131072 + MiB + 262144 + 524288 + 65536 + 65536 + size - last))
    DIRTY_COUNT=8
}

# prepare_changed_image QCOW2 SIZE: a fresh image of SIZE, its full copy in
# $T/old.raw, bitmap b0 added, the standard changes applied (see
# apply_changes, which sets DIRTY_*), and the changed image's full copy in
# $T/fresh.raw: what an incremental copy onto old.raw must turn it into.
prepare_changed_image() {
    local img=$1 size=$2
    make_image "$img" "$size"
    full_copy "$img" "$T/old.raw"
    add_bitmap "$img" b0
    apply_changes "$img" "$size"
    full_copy "$img" "$T/fresh.raw"
}
