#!/usr/bin/env bash
# NBD destinations that enforce the block sizes they advertise (nbdkit's
# blocksize-policy filter with blocksize-error-policy=error), for several
# minimum / preferred / maximum combinations, crossed with every option that
# changes the engine's path. A request breaking a rule fails the copy
# (EINVAL from the filter) and is counted in the request log as well.
# processors: 2
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-img python3

size=$((8 * MiB))
# Small random runs (4K-granular extents): holes that start and end inside
# 64K blocks.
start_nbdkit src -r sparse-random seed=11 size=$size percent=40 runlength=4096
nbd_to_file "$(uri_for src)" "$size" "$T/ref.img"
hash=$(python3 "$TEST_LIB/blkhash_reference.py" "$T/ref.img")

#      minimum preferred maximum
rules=("512 4096 65536"
       "4096 65536 1048576"
       "65536 65536 65536"
       "65536 1048576 33554432"
       "4096 4096 131072")
options=("" "--synchronous" "--allocated" "--destination-is-zero" "--blkhash"
         "--verify" "--no-extents" "-S 0" "-C 2 --request-size 64K" "--flush -R 1")

for rule in "${rules[@]}"; do
    read -r min pref max <<<"$rule"
    for opts in "${options[@]}"; do
        rm -f "$T/dst.log"
        start_nbdkit dst --filter=log --filter=blocksize-policy memory "$size" \
            blocksize-minimum="$min" blocksize-preferred="$pref" blocksize-maximum="$max" \
            blocksize-error-policy=error logfile="$T/dst.log"
        # shellcheck disable=SC2086
        run_copy $opts "$(uri_for src)" "$(uri_for dst)" >/dev/null
        bad=$(logtool misaligned "$T/dst.log" Read,Write,Zero,Trim "$min" "$max" "$size")
        [[ $bad -eq 0 ]] || fail "min=$min max=$max [$opts]: $bad requests broke the rules"
        assert_nbd_equals_file "$(uri_for dst)" "$T/ref.img" "min=$min pref=$pref max=$max [$opts]"
        stop_server dst
    done
    # --blkhash prints the source's digest, whatever the rules.
    start_nbdkit dst --filter=blocksize-policy memory "$size" blocksize-minimum="$min" \
        blocksize-preferred="$pref" blocksize-maximum="$max" blocksize-error-policy=error
    got=$("$NBDCOPY" --blkhash "$(uri_for src)" "$(uri_for dst)")
    [[ $got == "$hash" ]] || fail "min=$min: --blkhash printed $got, expected $hash"
    stop_server dst
done

msg "a destination without write-zeroes: zeroes are written as data, within the maximum"
# Holes of megabytes, so that zeroing one takes more than one maximum-sized write.
start_nbdkit holes -r sparse-random seed=13 size=$size percent=20 runlength=524288
nbd_to_file "$(uri_for holes)" "$size" "$T/holes.img"
for opts in "" "--synchronous"; do
    rm -f "$T/dst.log"
    start_nbdkit dst --filter=log --filter=blocksize-policy --filter=nozero memory "$size" \
        blocksize-minimum=4096 blocksize-preferred=65536 blocksize-maximum=65536 \
        blocksize-error-policy=error logfile="$T/dst.log"
    make_random_file "$T/junk.img" "$size"
    run_copy "$T/junk.img" "$(uri_for dst)"   # old data the zeroes must replace
    # shellcheck disable=SC2086
    run_copy $opts "$(uri_for holes)" "$(uri_for dst)"
    bad=$(logtool misaligned "$T/dst.log" Read,Write,Zero,Trim 4096 65536 "$size")
    [[ $bad -eq 0 ]] || fail "nozero [$opts]: $bad requests broke the rules"
    assert_nbd_equals_file "$(uri_for dst)" "$T/holes.img" "nozero destination [$opts]"
    stop_server dst
done

msg "a stream ending inside a destination block: the block's old bytes are kept"
# The stream is shorter than the export and ends mid-block: its last block
# is read back from the destination and written whole, so the bytes past
# the stream's end keep their old contents.
make_random_file "$T/old.img" "$size"
head -c $((3 * MiB + 1000)) "$T/ref.img" >"$T/stream.img"
cp "$T/old.img" "$T/expect.img"
dd if="$T/stream.img" of="$T/expect.img" conv=notrunc status=none
for min in 512 4096 65536; do
    cp "$T/old.img" "$T/dst.img"
    rm -f "$T/dst.log"
    start_nbdkit dst --filter=log --filter=blocksize-policy file "$T/dst.img" \
        blocksize-minimum="$min" blocksize-preferred=65536 blocksize-error-policy=error \
        logfile="$T/dst.log"
    "$NBDCOPY" - "$(uri_for dst)" <"$T/stream.img" 2>"$T/e" ||
        fail "stream, min=$min: $(cat "$T/e")"
    bad=$(logtool misaligned "$T/dst.log" Read,Write,Zero,Trim "$min" 0 "$size")
    [[ $bad -eq 0 ]] || fail "stream, min=$min: $bad requests broke the rules"
    stop_server dst
    assert_same_file "$T/expect.img" "$T/dst.img" "stream ending mid-block, min=$min"
done

msg "--request-size below the destination's minimum: refused, nothing written"
start_nbdkit dst --filter=log --filter=blocksize-policy memory "$size" \
    blocksize-minimum=65536 blocksize-preferred=65536 blocksize-error-policy=error \
    logfile="$T/dst.log"
expect_fail "$NBDCOPY" --request-size=4K "$(uri_for src)" "$(uri_for dst)"
assert_err_contains "--request-size=4096: smaller than"
assert_err_contains "minimum block size 65536"
[[ $(log_count "$T/dst.log" Write) -eq 0 && $(log_count "$T/dst.log" Zero) -eq 0 ]] ||
    fail "the refused copy wrote to the destination"
stop_server dst
msg PASS
