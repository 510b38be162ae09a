#!/usr/bin/env bash
# A block device with 4096-byte logical sectors as destination, from a
# source whose holes and data runs fall on 512-byte boundaries: zeroing
# and discarding take whole sectors only, so holes inside a sector are
# written with the neighbouring data.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop
require_cmd nbdkit python3

size=$((8 * MiB))
# The source: an image with 512-byte-granular runs, and its extents list,
# served by nbdkit's file plugin under the extentlist filter (the same
# bytes and extents as a script plugin, without a shell per request).
python3 - "$T/ref.img" "$T/extents.txt" "$size" <<'PY'
import os, random, sys
path, extents, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(4)
with open(path, "wb") as image, open(extents, "w") as out:
    offset, zero = 0, False
    while offset < size:
        n = min(size - offset, 512 * rng.choice([1, 1, 2, 3, 7, 9, 24, 200]))
        image.write(bytes(n) if zero else os.urandom(n))
        out.write(f"{offset} {n} {'3' if zero else '0'}\n")
        offset += n
        zero = not zero
PY
# (multi-conn disabled: one source connection, as a script plugin gives.)
start_nbdkit src -r --filter=multi-conn --filter=extentlist \
    file "$T/ref.img" extentlist="$T/extents.txt" multi-conn-mode=disable

for opts in "" "--synchronous" "--allocated" "-S 0" "--request-size=4K -R 4"; do
    make_random_file "$T/disk.img" "$size"   # junk the copy must overwrite
    attach_loop "$T/disk.img" --sector-size 4096
    [[ $(blockdev --getss "$LOOPDEV") -eq 4096 ]] || skip "loop device without 4K sectors"
    # shellcheck disable=SC2086
    run_copy -v $opts "$(uri_for src)" "$LOOPDEV"
    grep -q "dst: size=$size (.*), preferred block size=[0-9]* block_min=4096" "$T/cmd.err" ||
        fail "[$opts] the 4K logical sector was not seen: $(grep dst: "$T/cmd.err")"
    grep -q "alignment=4096" "$T/cmd.err" || fail "[$opts] requests not aligned to 4096"
    detach_loop "$LOOPDEV"
    assert_same_file "$T/ref.img" "$T/disk.img" "512-granular source to 4K-sector device [$opts]"
done
msg PASS
