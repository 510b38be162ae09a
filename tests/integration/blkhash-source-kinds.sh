#!/usr/bin/env bash
# --blkhash SRC null: gives the same digest, equal to the Python reference,
# whatever the kind of source: file, NBD URI (nbdkit file), stdin (redirected
# file and pipe), [ qemu-nbd -f qcow2 ] and a loop device (root only); and,
# for the NBD source, whatever the copy settings: -C 1/2/4, -R 1/4/64,
# --request-size 4K/64K/1M against blkhash block sizes 4K/64K/1M (requests
# smaller than, equal to and larger than the blocks), --no-extents on/off,
# --sparse=0/4096, --synchronous.  The image has data, holes and allocated
# zeroes and ends with a short block (its size is a multiple of 512 but not
# of 64K).
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3
REF=$TEST_LIB/blkhash_reference.py

# check WHAT EXPECTED ARGS...: run the binary with ARGS, require exit 0
# and a single 64-digit lowercase hex line on stdout: EXPECTED. (Called
# as it is, not in a $(...): a subshell per run cost about what the run
# did.)
check() {
    local what=$1 expected=$2 rc=0 out=
    shift 2
    "$NBDCOPY" "$@" >"$T/hash.out" 2>"$T/hash.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "nbdcopy $* exited $rc: $(cat "$T/hash.err")"
    IFS= read -r -d '' out <"$T/hash.out" || true
    [[ $out =~ ^[0-9a-f]{64}$'\n'$ ]] ||
        fail "nbdcopy $*: stdout is not one sha256 hex line: '$out'"
    out=${out%$'\n'}
    [[ $out == "$expected" ]] || fail "$what: got $out, expected $expected"
}

size=$((5 * MiB + 3 * 512))
make_test_file "$T/src.img" "$size"
# Some data right before the end of a 64K block and a 1M block inside the
# second hole, so that a block can be part data, part hole.
write_random "$T/src.img" $((MiB + 800000)) 1000
write_random "$T/src.img" $((3 * MiB - 100)) 100

# One python3 start for the three block sizes.
mapfile -t refs < <(python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from blkhash_reference import blkhash
for bs in (4096, 65536, 1048576):
    print(blkhash(sys.argv[2], "sha256", bs))
' "$(dirname "$REF")" "$T/src.img")
[[ ${#refs[@]} -eq 3 ]] || fail "python reference failed"
declare -A want=([4K]=${refs[0]} [64K]=${refs[1]} [1M]=${refs[2]})
[[ ${want[4K]} != "${want[64K]}" && ${want[64K]} != "${want[1M]}" ]] ||
    fail "block sizes should give different digests"

# ---------------------------------------------------------------------------
msg "file"
check "file" "${want[64K]}" --blkhash "$T/src.img" null:
for bs in 4K 1M; do
    check "file, sha256/$bs" "${want[$bs]}" --blkhash=sha256/$bs "$T/src.img" null:
done

msg "stdin: redirected file and pipe"
check "stdin file" "${want[64K]}" --blkhash - null: <"$T/src.img"
check "stdin pipe" "${want[64K]}" --blkhash - null: < <(cat "$T/src.img")
check "stdin pipe, sha256/4K" "${want[4K]}" --blkhash=sha256/4K - null: < <(cat "$T/src.img")
# A pipe that delivers odd-sized chunks slowly: 333333 bytes at a time,
# each chunk written by a dd of its own (the last one the rest, maybe none).
check "stdin pipe, dribbled" "${want[1M]}" --blkhash=sha256/1M - null: < <(
    dd if="$T/src.img" bs=777777 status=none | {
        for ((i = 0; i <= size / 333333; i++)); do
            dd bs=333333 count=1 iflag=fullblock status=none
        done
    })

if command -v qemu-img >/dev/null && command -v qemu-nbd >/dev/null; then
    msg "[ qemu-nbd -f qcow2 ]"
    qemu-img convert -q -f raw -O qcow2 "$T/src.img" "$T/src.qcow2"
    check "qcow2 via [ qemu-nbd ]" "${want[64K]}" \
        --blkhash -- [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] null:
    check "qcow2 via [ qemu-nbd ], sha256/4K" "${want[4K]}" \
        --blkhash=sha256/4K -- [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] null:
else
    msg "qemu-img/qemu-nbd missing: qcow2 part skipped"
fi

if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null &&
   [[ -e /dev/loop-control ]] && losetup -f >/dev/null 2>&1 &&
   LOOPDEV=$(losetup -f --show -r "$T/src.img" 2>/dev/null); then
    LOOPS+=("$LOOPDEV")
    msg "block device $LOOPDEV"
    check "loop device" "${want[64K]}" --blkhash "$LOOPDEV" null:
    check "loop device, sha256/1M" "${want[1M]}" --blkhash=sha256/1M "$LOOPDEV" null:
    detach_loop "$LOOPDEV"
else
    msg "no loop devices (needs root): block device part skipped"
fi

# ---------------------------------------------------------------------------
msg "NBD (nbdkit file): option grid"
start_nbdkit src -r file "$T/src.img"
uri=$(uri_for src)
check "nbd" "${want[64K]}" --blkhash "$uri" null:

n=0
for bs in 4K 64K 1M; do
    for rs in 4K 64K 1M; do
        for c in 1 2 4; do
            for r in 1 4 64; do
                # Rotate through the extents/sparse combinations so each
                # one meets every block size and request size.
                case $((n++ % 4)) in
                    0) extra=() ;;
                    1) extra=(--no-extents) ;;
                    2) extra=(--sparse=0) ;;
                    3) extra=(--no-extents --sparse=4096) ;;
                esac
                args=("--blkhash=sha256/$bs" "--request-size=$rs" -C "$c" -R "$r"
                      "${extra[@]}")
                check "nbd ${args[*]}" "${want[$bs]}" "${args[@]}" "$uri" null:
            done
        done
    done
done
for bs in 4K 64K 1M; do
    for extra in "" --no-extents --sparse=0 "--no-extents --sparse=0"; do
        # shellcheck disable=SC2086
        check "nbd --synchronous sha256/$bs $extra" "${want[$bs]}" \
            --synchronous --blkhash=sha256/$bs $extra "$uri" null:
    done
done
msg "$n grid runs"
stop_server src
msg PASS
