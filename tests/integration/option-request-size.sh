#!/usr/bin/env bash
# --request-size=N bounds every read and write request (nbdkit log filter
# on both ends), with and without --synchronous, and the copy is correct.
# (The destination is nbdkit's file plugin on a new file, all zeroes as a
# memory export starts: cmp checks it, no qemu-img read-back through the
# log; one grep a log, the shell finds the largest request.)
source "$(dirname "$0")/lib/lib.sh"

size=$((3 * MiB + 1234))
make_random_file "$T/src.img" "$size"   # all data, so requests are full-sized
src_uri=$(uri_for src) dst_uri=$(uri_for dst)

for rs in 4096 65536 $((1 * MiB)); do
    for mode in default --synchronous; do
        opt=(--request-size="$rs"); [[ $mode == default ]] || opt+=("$mode")
        msg "${opt[*]}"
        rm -f "$T"/req-*.txt "$T/dst.img"
        truncate -s "$size" "$T/dst.img"
        start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/req-src.txt"
        start_nbdkit dst --filter=log file "$T/dst.img" logfile="$T/req-dst.txt"
        run_copy "${opt[@]}" "$src_uri" "$dst_uri"
        stop_server src
        stop_server dst
        cmp -s "$T/src.img" "$T/dst.img" ||
            fail "copy with ${opt[*]}: $(cmp "$T/src.img" "$T/dst.img" 2>&1 | head -n 1)"
        for f in "$T/req-src.txt:Read" "$T/req-dst.txt:Write"; do
            max=0
            while read -r line; do
                c=$((${line##*count=}))
                if ((c > max)); then max=$c; fi
            done < <(grep -oE "connection=[0-9]+ ${f#*:} id=[0-9]+ offset=0x[0-9a-fA-F]+ count=0x[0-9a-fA-F]+" \
                "${f%:*}")
            ((max > 0)) || fail "${opt[*]}: no ${f#*:} requests logged"
            ((max <= rs)) || fail "${opt[*]}: ${f#*:} request of $max bytes > $rs"
        done
    done
done
msg PASS
