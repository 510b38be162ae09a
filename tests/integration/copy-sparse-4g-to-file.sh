#!/usr/bin/env bash
# A 4 GiB sparse file with a few MiB of data at a few offsets, copied to a
# file: identical content (qemu-img compare, which skips holes, plus cmp of
# each data region) and the destination is sparse too: holes are not
# shipped as data.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img

size=$((4 * 1024 * MiB))
truncate -s "$size" "$T/src.img"
offsets="0 $((1024 * MiB + 12345)) $((3 * 1024 * MiB)) $((size - MiB))"
for off in $offsets; do
    write_random "$T/src.img" "$off" "$MiB"
done
# Allocated zeroes in the source must not become allocated data either.
write_zeroes "$T/src.img" $((2 * 1024 * MiB)) $((2 * MiB))

run_copy "$T/src.img" "$T/dst.img"
[[ -f $T/dst.img ]] || fail "destination not created"

[[ $(stat -c %s "$T/dst.img") -eq $size ]] ||
    fail "destination size $(stat -c %s "$T/dst.img"), expected $size"
qemu-img compare -q -f raw -F raw "$T/src.img" "$T/dst.img" ||
    fail "qemu-img compare: content differs"
for off in $offsets; do
    cmp -s <(tail -c +$((off + 1)) "$T/src.img" | head -c "$MiB") \
           <(tail -c +$((off + 1)) "$T/dst.img" | head -c "$MiB") ||
        fail "data at offset $off differs"
done

used=$(( $(stat -c %b "$T/dst.img") * $(stat -c %B "$T/dst.img") ))
msg "destination allocates $used bytes for a $size byte file"
((used < 64 * MiB)) || fail "destination is not sparse: $used bytes allocated"
msg PASS
