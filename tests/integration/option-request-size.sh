#!/usr/bin/env bash
# --request-size=N bounds every read and write request (nbdkit log filter
# on both ends), with and without --synchronous, and the copy is correct.
source "$(dirname "$0")/lib/lib.sh"

size=$((3 * MiB + 1234))
make_random_file "$T/src.img" "$size"   # all data, so requests are full-sized

for rs in 4096 65536 $((1 * MiB)); do
    for mode in default --synchronous; do
        opt=(--request-size="$rs"); [[ $mode == default ]] || opt+=("$mode")
        msg "${opt[*]}"
        rm -f "$T"/req-*.txt
        start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/req-src.txt"
        start_nbdkit dst --filter=log memory size="$size" logfile="$T/req-dst.txt"
        run_copy "${opt[@]}" "$(uri_for src)" "$(uri_for dst)"
        stop_server src
        assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "copy with ${opt[*]}"
        stop_server dst
        for f in "$T/req-src.txt:Read" "$T/req-dst.txt:Write"; do
            max=0
            for c in $(grep -E "connection=[0-9]+ ${f#*:} id=" "${f%:*}" |
                       grep -o 'count=0x[0-9a-fA-F]*' | cut -d= -f2); do
                if ((c > max)); then max=$((c)); fi
            done
            ((max > 0)) || fail "${opt[*]}: no ${f#*:} requests logged"
            ((max <= rs)) || fail "${opt[*]}: ${f#*:} request of $max bytes > $rs"
        done
    done
done
msg PASS
