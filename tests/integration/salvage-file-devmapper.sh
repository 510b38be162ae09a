#!/usr/bin/env bash
# --salvage from a local block device with bad areas: a device-mapper
# table of `linear` segments over a loop device with two `error` segments
# (every read of them fails with EIO), read directly (plain preads, and
# through the io_uring when the destination is NBD) and through nbdkit's
# file plugin (NBD error replies). The copy equals the device outside the
# error segments and holds zeroes inside, the ranges told are exactly the
# segments, exit status 4. Segments are 4 KiB-aligned: the block device's
# page cache reads whole pages. Skips without root or device-mapper (a
# container, a kernel without dm-mod).
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_root_loop
require_cmd dmsetup
require_cmd nbdkit

size=$((8 * MiB))
head -c "$size" /dev/urandom >"$T/disk.img"
attach_loop "$T/disk.img" -r
name="nbdcopy-salvage-$$"
sectors=$((size / 512))
# Bad: 4 KiB at 1 MiB + 8 KiB, 256 KiB at 5 MiB - 4 KiB (over 1 MiB requests).
table="0 2064 linear $LOOPDEV 0
2064 8 error
2072 8160 linear $LOOPDEV 2072
10232 512 error
10744 $((sectors - 10744)) linear $LOOPDEV 10744"
dmsetup create "$name" --readonly <<<"$table" 2>"$T/dm.err" ||
    skip "device-mapper unavailable: $(head -n 1 "$T/dm.err")"
at_exit "dmsetup remove --retry $name"
device=/dev/mapper/$name
[[ -b $device ]] || skip "$device did not appear (no udev?)"

cp "$T/disk.img" "$T/rescued.img"
dd if=/dev/zero of="$T/rescued.img" bs=512 seek=2064 count=8 conv=notrunc status=none
dd if=/dev/zero of="$T/rescued.img" bs=512 seek=10232 count=512 conv=notrunc status=none

# check_lines NAME: exactly the two segments were told, for source NAME.
check_lines() {
    local got
    got=$(grep ': unreadable: ' "$T/cmd.err" | sort -t' ' -k5n)
    [[ $got == "nbdcopy: $1: unreadable: offset 1056768 length 4096: Input/output error
nbdcopy: $1: unreadable: offset 5238784 length 262144: Input/output error" ]] ||
        fail "unreadable lines for $1: $got"
}

msg "without --salvage"
expect_fail "$NBDCOPY" "$device" "$T/out.img"
assert_err_contains "read at offset"
assert_err_contains "Input/output error"

for engine in "" --synchronous; do
    msg "salvage from the device ${engine:-(parallel)}"
    rc=0
    "$NBDCOPY" --salvage $engine "$device" "$T/out.img" 2>"$T/cmd.err" || rc=$?
    _show_err "$T/cmd.err" 5
    [[ $rc -eq 4 ]] || fail "exit status $rc, expected 4"
    check_lines "$device"
    assert_same_file "$T/rescued.img" "$T/out.img" "rescued from $device"
done

msg "salvage from the device into NBD (the file source reads through its io_uring)"
start_nbdkit dst memory size="$size"
rc=0
"$NBDCOPY" --salvage "$device" "$(uri_for dst)" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 4 ]] || fail "exit status $rc, expected 4: $(<"$T/cmd.err")"
check_lines "$device"
assert_nbd_equals_file "$(uri_for dst)" "$T/rescued.img" "rescued into NBD"

msg "salvage through nbdkit's file plugin over the device"
start_nbdkit src -r file "$device"
rc=0
"$NBDCOPY" --salvage "$(uri_for src)" "$T/out.img" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 4 ]] || fail "exit status $rc, expected 4: $(<"$T/cmd.err")"
check_lines "$(uri_for src)"
assert_same_file "$T/rescued.img" "$T/out.img" "rescued through nbdkit"
msg PASS
