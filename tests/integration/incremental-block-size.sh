#!/usr/bin/env bash
# --dirty-bitmap under block-size rules: a bitmap of 4K granularity
# ("qemu-img bitmap --add -g 4096"), small scattered changes (4K writes, a
# write straddling two 64K blocks, a 4K write -z inside data, and a 64K
# write -z that must arrive as a Zero request), and a destination that
# takes only whole 64K blocks (nbdkit blocksize-policy, error policy, over
# the old full copy).  Dirty granules grow to whole 64K blocks: every Write
# and Zero request is 64K-aligned, lies inside the 64K blocks that hold a
# change, and the result equals a fresh full copy (a marker in a clean block
# stays).  Parallel and --synchronous.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"
require_cmd nbdkit

size=$((8 * MiB))
img=$T/img.qcow2
make_image "$img" "$size"
full_copy "$img" "$T/old.raw"
qemu-img bitmap --add --enable -g 4096 "$img" b0 || fail "qemu-img bitmap --add -g 4096 failed"
qio "$img" "write -P 0x11 $((1 * MiB + 8192)) 4k" "write -z $((2 * MiB + 65536 + 4096)) 4k" \
    "write -P 0x22 $((3 * MiB + 65536 - 2048)) 4k" "write -P 0x33 $((5 * MiB + 200000)) 4k" \
    "write -z $((4 * MiB)) 64k"
full_copy "$img" "$T/fresh.raw"
# The 64K blocks holding a change (the straddling write touches two).
blocks="$((1 * MiB))+65536,$((2 * MiB + 65536))+65536,$((3 * MiB))+131072"
blocks+=",$((5 * MiB + 196608))+65536,$((4 * MiB))+65536"
marker=$((6 * MiB))
start_qemu_nbd src -r -B b0 -f qcow2 -e 2 -t "$img"

run_case() { # NAME OPTIONS...
    local name=$1; shift
    local log=$T/$name.req
    cp "$T/old.raw" "$T/$name.raw"
    plant_marker "$T/$name.raw" "$marker"
    start_nbdkit dst --filter=log --filter=blocksize-policy file "$T/$name.raw" \
        blocksize-minimum=65536 blocksize-preferred=65536 blocksize-maximum=1048576 \
        blocksize-error-policy=error logfile="$log"
    run_copy "$@" --dirty-bitmap=b0 "$(uri_for src)" "$(uri_for dst)"
    stop_server dst
    # One logtool start for the three figures.
    local figures misaligned outside unzeroed
    mapfile -t figures < <(logtool misaligned "$log" Write,Zero 65536 1048576 "$size" \
        -- outranges "$log" Write,Zero,Trim "$blocks" \
        -- unspanned "$log" Zero "$((4 * MiB))+65536")
    ((${#figures[@]} == 3)) || fail "$name: logtool failed on $log"
    read -r misaligned outside unzeroed <<<"${figures[*]}"
    [[ $misaligned -eq 0 ]] || fail "$name: $misaligned requests break the 64K block rules"
    [[ $outside -eq 0 ]] || fail "$name: $outside bytes written or zeroed outside the changed blocks"
    [[ $unzeroed -eq 0 ]] || fail "$name: the zeroed 64K block was not a Zero request"
    assert_incremental "$T/$name.raw" "$T/fresh.raw" "$marker" "$name"
}

run_case parallel -C 2 -T 2
run_case synchronous --synchronous
stop_server src
msg PASS
