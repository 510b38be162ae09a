#!/usr/bin/env bash
# --dirty-bitmap refusals: exact one-line messages, exit status 1, and the
# destination unchanged (checksum before and after) or not created.
#  - the server does not offer the bitmap (none exported, or another name);
#  - the source is not an NBD server;
#  - the destination is smaller than the source, does not exist, is a
#    stream ("-") or a FIFO;
#  - --destination-is-zero / --target-is-zero and --blkhash.
# labels: error
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/incremental_lib.bash"

size=$((8 * MiB))
img=$T/img.qcow2
make_image "$img" "$size"
full_copy "$img" "$T/dst.raw"
add_bitmap "$img" b0
qio "$img" "write -P 0x11 $MiB 64k"
before=$(md5sum <"$T/dst.raw")

unchanged() {
    [[ $(md5sum <"$T/dst.raw") == "$before" ]] || fail "the destination was modified"
}
expect_message() { # MESSAGE
    [[ $ERR == "$1" ]] || fail "expected '$1', got '$ERR'"
}

# The server exports no bitmap, or another one.
expect_fail "$NBDCOPY" --dirty-bitmap=b0 -- [ qemu-nbd -r -f qcow2 "$img" ] "$T/dst.raw"
expect_message "nbdcopy: --dirty-bitmap=b0: [ qemu-nbd -r -f qcow2 $img ]: the server does not offer the meta context qemu:dirty-bitmap:b0"
unchanged
start_qemu_nbd src -r -B b0 -f qcow2 -t "$img"
expect_fail "$NBDCOPY" --dirty-bitmap=b9 "$(uri_for src)" "$T/dst.raw"
expect_message "nbdcopy: --dirty-bitmap=b9: $(uri_for src): the server does not offer the meta context qemu:dirty-bitmap:b9"
unchanged

# Not an NBD source.
cp "$T/dst.raw" "$T/src.raw"
expect_fail "$NBDCOPY" --dirty-bitmap=b0 "$T/src.raw" "$T/dst.raw"
expect_message "nbdcopy: --dirty-bitmap=b0: $T/src.raw: the source must be an NBD server offering the meta context qemu:dirty-bitmap:b0"
unchanged

# Destination smaller than the source: never resized.
head -c $((size - MiB)) "$T/dst.raw" >"$T/small.raw"
small_before=$(md5sum <"$T/small.raw")
expect_fail "$NBDCOPY" --dirty-bitmap=b0 "$(uri_for src)" "$T/small.raw"
expect_message "nbdcopy: error: destination size is smaller than source size ($T/small.raw: source $size bytes, destination $((size - MiB)) bytes)"
[[ $(md5sum <"$T/small.raw") == "$small_before" ]] || fail "the small destination was modified"

# Missing destination: not created.
expect_fail "$NBDCOPY" --dirty-bitmap=b0 "$(uri_for src)" "$T/missing.raw"
expect_message "nbdcopy: --dirty-bitmap=b0: $T/missing.raw: the destination must already exist: No such file or directory"
[[ ! -e $T/missing.raw ]] || fail "the missing destination was created"

# Streams.
expect_fail "$NBDCOPY" --dirty-bitmap=b0 "$(uri_for src)" -
expect_message "nbdcopy: --dirty-bitmap=b0: -: an incremental copy writes onto an existing image, not a stream"
[[ ! -s $T/cmd.out ]] || fail "something was written to stdout"
mkfifo "$T/fifo"
expect_fail "$NBDCOPY" --dirty-bitmap=b0 "$(uri_for src)" "$T/fifo"
expect_message "nbdcopy: --dirty-bitmap=b0: $T/fifo: an incremental copy writes onto an existing image, not a stream"

# Refused options.
for zero in --destination-is-zero --target-is-zero; do
    expect_fail "$NBDCOPY" "$zero" --dirty-bitmap=b0 "$(uri_for src)" "$T/dst.raw"
    expect_message "nbdcopy: --destination-is-zero: cannot be used with --dirty-bitmap (the destination holds the previous copy, and zeroes inside dirty ranges must be written)"
    unchanged
done
expect_fail "$NBDCOPY" --blkhash --dirty-bitmap=b0 "$(uri_for src)" "$T/dst.raw"
expect_message "nbdcopy: --blkhash: cannot be used with --dirty-bitmap (the digest covers the whole source, an incremental copy reads only the dirty ranges; use --verify to check the result)"
unchanged

# And the same destination is accepted once the command line is right.
run_copy --dirty-bitmap=b0 "$(uri_for src)" "$T/dst.raw"
full_copy "$img" "$T/fresh.raw"
assert_same_file "$T/fresh.raw" "$T/dst.raw" "incremental copy"
stop_server src
msg PASS
