#!/usr/bin/env bash
# A backup chain with --dirty-bitmap: a full copy (by nbdcopy), then an
# incremental copy from bitmap b0, then one from b1 (added when the first
# incremental was taken), then one from b0 again after "qemu-img bitmap
# --clear".  After every step the copy equals a fresh full copy made by
# qemu-img.  The last step runs with --verify (whole-image digests, source
# read in full), which passes; --verify also catches a copy damaged outside
# the dirty ranges (an incremental copy would not repair it).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"

size=$((16 * MiB))
img=$T/img.qcow2
make_image "$img" "$size"
src() { echo -- [ qemu-nbd -r "$@" -f qcow2 "$img" ]; }

check_step() { # WHAT
    full_copy "$img" "$T/fresh.raw"
    assert_same_file "$T/fresh.raw" "$T/chain.raw" "$1"
}

run_copy $(src) "$T/chain.raw"
check_step "full copy"

add_bitmap "$img" b0
qio "$img" "write -P 0x61 $((2 * MiB)) 192k" "write -z $((6 * MiB)) 64k" \
    "write -P 0x62 $((size - 4096)) 4096"
add_bitmap "$img" b1  # the next increment starts here
run_copy --dirty-bitmap=b0 $(src -B b0) "$T/chain.raw"
check_step "first incremental (b0)"

qio "$img" "write -P 0x63 $((1 * MiB + 30000)) 70000" "discard $((2 * MiB)) 64k" \
    "write -P 0x64 $((10 * MiB)) 1M"
run_copy --synchronous --dirty-bitmap=b1 $(src -B b1) "$T/chain.raw"
check_step "second incremental (b1)"

qemu-img bitmap --clear "$img" b0 || fail "qemu-img bitmap --clear failed"
qio "$img" "write -z -u $((10 * MiB + 128 * 1024)) 256k" "write -P 0x65 $((12 * MiB)) 4k"
cp "$T/chain.raw" "$T/before-third.raw"
run_copy --verify --dirty-bitmap=b0 $(src -B b0) "$T/chain.raw"
check_step "third incremental (b0 after --clear), --verify"

# A previous copy damaged in a clean range: the copy leaves the damage,
# --verify reports it.
cp "$T/before-third.raw" "$T/damaged.raw"
plant_marker "$T/damaged.raw" $((4 * MiB))
expect_fail "$NBDCOPY" --verify --dirty-bitmap=b0 $(src -B b0) "$T/damaged.raw"
assert_err_contains "--verify: $T/damaged.raw: the destination does not match the source"
msg PASS
