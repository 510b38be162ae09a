#!/usr/bin/env bash
# Sizes that are not a multiple of the request size, with the smallest
# request size (--request-size=4096) and the default: the last partial
# request is copied exactly, nothing more, nothing less.
#
# The NBD export is nbdkit's file plugin on a file of its own (new, all
# zeroes, as a memory export starts): cmp checks what the copy wrote there,
# no qemu-img read-back.  Every result file has a name of its own (nothing
# to remove first), and one cmp checks it: that fails on a missing file
# or on another size as well as on other bytes.
source "$(dirname "$0")/lib/lib.sh"

# same EXPECTED ACTUAL WHAT: ACTUAL has EXPECTED's bytes, no more, no fewer.
same() {
    cmp -s "$1" "$2" || fail "$3: $(cmp "$1" "$2" 2>&1 | head -n 1)"
}

nbd_uri=$(uri_for nbd)
for size in $((2 * MiB + 1234)) 4097 1 $((MiB - 1)); do
    make_test_file "$T/src.img" "$size"
    for rs in 4096 default; do
        opt=(); [[ $rs == default ]] || opt=(--request-size="$rs")
        out=$T/out-$size-$rs.img exp=$T/export-$size-$rs.img back=$T/back-$size-$rs.img
        msg "size $size, request size $rs: file -> file"
        run_copy "${opt[@]}" "$T/src.img" "$out"
        same "$T/src.img" "$out" "file copy of $size bytes ($rs)"

        msg "size $size, request size $rs: file -> nbd -> file"
        truncate -s "$size" "$exp"
        start_nbdkit nbd file "$exp"
        run_copy "${opt[@]}" "$T/src.img" "$nbd_uri"
        same "$T/src.img" "$exp" "nbd export of $size bytes ($rs)"
        run_copy "${opt[@]}" "$nbd_uri" "$back"
        stop_server nbd
        same "$T/src.img" "$back" "nbd round trip of $size bytes ($rs)"
    done
done
msg PASS
