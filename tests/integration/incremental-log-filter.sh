#!/usr/bin/env bash
# --dirty-bitmap onto an NBD destination (nbdkit file plugin holding the
# old full copy) behind nbdkit's log filter: every Write and Zero request
# lies inside the dirty granules, together they cover all of them (holes
# inside dirty ranges are zeroed, never skipped), the new zeroes arrive as
# Zero requests, and nothing is trimmed or written elsewhere.  The result
# read back equals a fresh full copy, except a marker in a clean range.
# Parallel (two connections each side) and --synchronous.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"
require_cmd nbdkit

size=$((24 * MiB + 4096))
img=$T/img.qcow2
prepare_changed_image "$img" "$size"
marker=$((17 * MiB))
start_qemu_nbd src -r -B b0 -f qcow2 -e 2 -t "$img"

run_case() { # NAME OPTIONS...
    local name=$1; shift
    local log=$T/$name.req
    cp "$T/old.raw" "$T/$name.raw"
    plant_marker "$T/$name.raw" "$marker"
    start_nbdkit dst --filter=log file "$T/$name.raw" logfile="$log"
    run_copy "$@" --dirty-bitmap=b0 "$(uri_for src)" "$(uri_for dst)"
    stop_server dst
    # One logtool start for every figure (sum and count are log_sum's and
    # log_count's).
    local figures outside unspanned zeroed trims written
    mapfile -t figures < <(logtool outranges "$log" Write,Zero,Trim "$DIRTY_RANGES" \
        -- unspanned "$log" Write,Zero "$DIRTY_RANGES" -- sum "$log" Zero \
        -- count "$log" Trim -- sum "$log" Write)
    ((${#figures[@]} == 5)) || fail "$name: logtool failed on $log"
    read -r outside unspanned zeroed trims written <<<"${figures[*]}"
    msg "  $name: $written bytes written, $zeroed zeroed"
    [[ $outside -eq 0 ]] || fail "$name: $outside bytes written or zeroed outside dirty ranges"
    [[ $unspanned -eq 0 ]] || fail "$name: $unspanned dirty bytes neither written nor zeroed"
    # write -z 1M, write -z -u 256K, discard 512K: all read as zeroes now.
    ((zeroed >= MiB + 262144 + 524288)) || fail "$name: only $zeroed bytes zeroed"
    [[ $trims -eq 0 ]] || fail "$name: $trims Trim requests"
    assert_incremental "$T/$name.raw" "$T/fresh.raw" "$marker" "$name"
}

run_case parallel -C 2 -T 2
run_case synchronous --synchronous
stop_server src
msg PASS
