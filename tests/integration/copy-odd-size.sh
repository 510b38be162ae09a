#!/usr/bin/env bash
# Sizes that are not a multiple of the request size, with the smallest
# request size (--request-size=4096) and the default: the last partial
# request is copied exactly, nothing more, nothing less.
source "$(dirname "$0")/lib/lib.sh"

for size in $((2 * MiB + 1234)) 4097 1 $((MiB - 1)); do
    make_test_file "$T/src.img" "$size"
    for rs in 4096 default; do
        opt=(); [[ $rs == default ]] || opt=(--request-size="$rs")
        msg "size $size, request size $rs: file -> file"
        rm -f "$T/out.img"
        run_copy "${opt[@]}" "$T/src.img" "$T/out.img"
        assert_same_file "$T/src.img" "$T/out.img" "file copy of $size bytes ($rs)"

        msg "size $size, request size $rs: file -> nbd -> file"
        start_nbdkit mem memory size="$size"
        run_copy "${opt[@]}" "$T/src.img" "$(uri_for mem)"
        assert_nbd_equals_file "$(uri_for mem)" "$T/src.img" "nbd export of $size bytes ($rs)"
        run_copy "${opt[@]}" "$(uri_for mem)" "$T/back.img"
        stop_server mem
        assert_same_file "$T/src.img" "$T/back.img" "nbd round trip of $size bytes ($rs)"
    done
done
msg PASS
