#!/usr/bin/env bash
# NBD sources that enforce the block sizes they advertise (nbdkit's
# blocksize-policy filter, blocksize-error-policy=error), into a file and
# into an NBD server, with the options that change the engine's path. Every
# read must obey the source's minimum and maximum.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-img

size=$((8 * MiB))
start_nbdkit plain -r sparse-random seed=12 size=$size percent=40 runlength=4096
nbd_to_file "$(uri_for plain)" "$size" "$T/ref.img"

rules=("512 4096 65536" "65536 65536 65536" "4096 1048576 33554432" "65536 65536 131072")
options=("" "--synchronous" "--allocated" "--no-extents" "-S 0" "--blkhash" "-C 2")

for rule in "${rules[@]}"; do
    read -r min pref max <<<"$rule"
    rm -f "$T/src.log"
    start_nbdkit src -r --filter=log --filter=blocksize-policy sparse-random seed=12 \
        size=$size percent=40 runlength=4096 blocksize-minimum="$min" \
        blocksize-preferred="$pref" blocksize-maximum="$max" blocksize-error-policy=error \
        logfile="$T/src.log"
    for opts in "${options[@]}"; do
        rm -f "$T/out.img"
        # shellcheck disable=SC2086
        run_copy $opts "$(uri_for src)" "$T/out.img" >/dev/null
        assert_same_file "$T/ref.img" "$T/out.img" "min=$min pref=$pref max=$max [$opts] to file"
    done
    start_nbdkit dst memory "$size"
    run_copy --flush "$(uri_for src)" "$(uri_for dst)"
    assert_nbd_equals_file "$(uri_for dst)" "$T/ref.img" "min=$min max=$max to nbd"
    stop_server dst
    bad=$(logtool misaligned "$T/src.log" Read "$min" "$max" "$size")
    [[ $bad -eq 0 ]] || fail "min=$min max=$max: $bad reads broke the source's rules"
    [[ $(log_count "$T/src.log" Read) -gt 0 ]] || fail "the log saw no reads"
    stop_server src
done
msg PASS
