#!/usr/bin/env bash
# A smaller source into a larger NBD destination is allowed: the prefix is
# identical to the source and the tail of the destination is untouched
# (checked on an nbdkit file export and on a qemu-nbd export, both
# pre-filled with random bytes).
source "$(dirname "$0")/lib/lib.sh"

size=$((2 * MiB + 1536))
dsize=$((5 * MiB))
make_test_file "$T/src.img" "$size"

check_dst() { # FILE WHAT
    [[ $(stat -c %s "$1") -eq $dsize ]] || fail "$2: destination size changed"
    cmp -s -n "$size" "$T/src.img" "$1" || fail "$2: copied prefix differs"
    cmp -s -i "$size" "$T/dst.orig" "$1" || fail "$2: tail beyond the source size was modified"
}

make_random_file "$T/dst.orig" "$dsize"

msg "2 MiB + 1536 -> 5 MiB nbdkit file export"
cp "$T/dst.orig" "$T/dst1.img"
start_nbdkit dst1 file "$T/dst1.img"
run_copy "$T/src.img" "$(uri_for dst1)"
stop_server dst1
check_dst "$T/dst1.img" "nbdkit destination"

msg "2 MiB + 1536 -> 5 MiB qemu-nbd raw export"
cp "$T/dst.orig" "$T/dst2.img"
start_qemu_nbd dst2 -f raw "$T/dst2.img"
run_copy "$T/src.img" "$(uri_for dst2)"
stop_server dst2
check_dst "$T/dst2.img" "qemu-nbd destination"
msg PASS
