#!/usr/bin/env bash
# NBD sources that enforce the block sizes they advertise (nbdkit's
# blocksize-policy filter, blocksize-error-policy=error), into a file and
# into an NBD server, with the options that change the engine's path. Every
# read must obey the source's minimum and maximum.
#
# (Cheap on processes, 32 copies: the copies into files have names of
# their own, removed once per rule, and are checked by one cmp each, which
# fails on a missing file or on another size as well as on other bytes; the
# NBD destination is nbdkit's file plugin on a file, which cmp reads once
# the server has stopped: the engine sees the same as from the memory
# plugin, multi-conn, zero and trim, no block sizes.)
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-img

size=$((8 * MiB))
start_nbdkit plain -r sparse-random seed=12 size=$size percent=40 runlength=4096
nbd_to_file "$(uri_for plain)" "$size" "$T/ref.img"

# same FILE WHAT: FILE has ref.img's bytes, no more, no fewer.
same() {
    cmp -s "$T/ref.img" "$1" || fail "$2: $(cmp "$T/ref.img" "$1" 2>&1 | head -n 1)"
}

rules=("512 4096 65536" "65536 65536 65536" "4096 1048576 33554432" "65536 65536 131072")
options=("" "--synchronous" "--allocated" "--no-extents" "-S 0" "--blkhash" "-C 2")
src_uri=$(uri_for src) dst_uri=$(uri_for dst)

for rule in "${rules[@]}"; do
    read -r min pref max <<<"$rule"
    rm -f "$T/src.log" "$T"/out-*.img
    start_nbdkit src -r --filter=log --filter=blocksize-policy sparse-random seed=12 \
        size=$size percent=40 runlength=4096 blocksize-minimum="$min" \
        blocksize-preferred="$pref" blocksize-maximum="$max" blocksize-error-policy=error \
        logfile="$T/src.log"
    for i in "${!options[@]}"; do
        opts=${options[i]}
        # shellcheck disable=SC2086
        run_copy $opts "$src_uri" "$T/out-$i.img" >/dev/null
        same "$T/out-$i.img" "min=$min pref=$pref max=$max [$opts] to file"
    done
    : >"$T/dst.img" # (empty: nothing of the last rule's copy is left)
    truncate -s "$size" "$T/dst.img"
    start_nbdkit dst file "$T/dst.img"
    run_copy --flush "$src_uri" "$dst_uri"
    stop_server dst
    same "$T/dst.img" "min=$min max=$max to nbd"
    # The reads that broke the rules, and all the reads.
    counts=$(logtool misaligned "$T/src.log" Read "$min" "$max" "$size" -- \
        count "$T/src.log" Read)
    read -r bad reads <<<"${counts//$'\n'/ }"
    [[ $bad -eq 0 ]] || fail "min=$min max=$max: $bad reads broke the source's rules"
    [[ $reads -gt 0 ]] || fail "the log saw no reads"
    stop_server src
done
msg PASS
