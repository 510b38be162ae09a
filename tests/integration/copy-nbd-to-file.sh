#!/usr/bin/env bash
# NBD to file: byte-identical, from several nbdkit plugins with different
# layouts (data expression with an odd size, sparse-random, pattern, file).
# The expected bytes are read with qemu-img, not nbdcopy.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

check_source() { # NAME SIZE
    local uri
    uri=$(uri_for "$1")
    nbd_to_file "$uri" "$2" "$T/expected-$1.img"
    make_random_file "$T/out-$1.img" 4096   # stale destination to overwrite
    run_copy "$uri" "$T/out-$1.img"
    assert_same_file "$T/expected-$1.img" "$T/out-$1.img" "copy of nbdkit $1"
}

size=$((5 * MiB + 1234))
msg "nbdkit data (odd size, data/zero mix)"
start_nbdkit data data "( 0x55 0xAA 1 2 3 )*70000 @0x180000 </dev/urandom[:300000]
    @0x300000 ( \"nbdcopy\" )*20000 @$((size - 1000)) </dev/urandom[:1000]" \
    size="$size"
check_source data "$size"

msg "nbdkit sparse-random"
start_nbdkit sparse sparse-random size=$((16 * MiB)) percent=30 seed=4321
check_source sparse $((16 * MiB))

msg "nbdkit pattern (read-only)"
start_nbdkit pattern -r pattern size=$((3 * MiB + 512))
check_source pattern $((3 * MiB + 512))

msg "nbdkit file (odd size, holes and allocated zeroes)"
make_test_file "$T/src.img" "$size"
start_nbdkit file -r file "$T/src.img"
check_source file "$size"
assert_same_file "$T/src.img" "$T/out-file.img" "copy of nbdkit file vs its backing file"
msg PASS
