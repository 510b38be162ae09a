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
SRC=$(uri_for src) DST=$(uri_for dst)
nbd_to_file "$SRC" "$size" "$T/ref.img"
hash=$(python3 "$TEST_LIB/blkhash_reference.py" "$T/ref.img")

#      minimum preferred maximum
rules=("512 4096 65536"
       "4096 65536 1048576"
       "65536 65536 65536"
       "65536 1048576 33554432"
       "4096 4096 131072")
options=("" "--synchronous" "--allocated" "--destination-is-zero" "--blkhash"
         "--verify" "--no-extents" "-S 0" "-C 2 --request-size 64K" "--flush -R 1")

# The request logs are read at the end, all in one logtool run (a python3
# start per copy cost more than the reading): each copy keeps its own log
# (dst-N.log), LOG_ARGS gathers the logtool sub-commands and LOG_WHAT says
# which copy each one checks.
LOG_ARGS=() LOG_WHAT=()
check_log_later() { # LOG MIN MAX WHAT
    LOG_ARGS+=(misaligned "$1" "Read,Write,Zero,Trim" "$2" "$3" "$size" --)
    LOG_WHAT+=("$4")
}
n=0
for rule in "${rules[@]}"; do
    read -r min pref max <<<"$rule"
    for opts in "${options[@]}"; do
        log=$T/dst-$((++n)).log
        start_nbdkit dst --filter=log --filter=blocksize-policy memory "$size" \
            blocksize-minimum="$min" blocksize-preferred="$pref" blocksize-maximum="$max" \
            blocksize-error-policy=error logfile="$log"
        # shellcheck disable=SC2086
        run_copy $opts "$SRC" "$DST" >"$T/copy.out"
        check_log_later "$log" "$min" "$max" "min=$min max=$max [$opts]"
        assert_nbd_equals_file "$DST" "$T/ref.img" "min=$min pref=$pref max=$max [$opts]"
        # --blkhash prints the source's digest, whatever the rules. (The
        # log filter in front passes every request through unchanged: this
        # is the copy a destination without it would see.)
        if [[ $opts == --blkhash ]]; then
            got=
            read -r got <"$T/copy.out" || true
            [[ $got == "$hash" ]] || fail "min=$min: --blkhash printed $got, expected $hash"
        fi
        stop_server dst
    done
done

msg "a destination without write-zeroes: zeroes are written as data, within the maximum"
# Holes of megabytes, so that zeroing one takes more than one maximum-sized write.
start_nbdkit holes -r sparse-random seed=13 size=$size percent=20 runlength=524288
HOLES=$(uri_for holes)
nbd_to_file "$HOLES" "$size" "$T/holes.img"
make_random_file "$T/junk.img" "$size"
for opts in "" "--synchronous"; do
    log=$T/dst-$((++n)).log
    start_nbdkit dst --filter=log --filter=blocksize-policy --filter=nozero memory "$size" \
        blocksize-minimum=4096 blocksize-preferred=65536 blocksize-maximum=65536 \
        blocksize-error-policy=error logfile="$log"
    run_copy "$T/junk.img" "$DST"   # old data the zeroes must replace
    # shellcheck disable=SC2086
    run_copy $opts "$HOLES" "$DST"
    check_log_later "$log" 4096 65536 "nozero [$opts]"
    assert_nbd_equals_file "$DST" "$T/holes.img" "nozero destination [$opts]"
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
    log=$T/dst-$((++n)).log
    start_nbdkit dst --filter=log --filter=blocksize-policy file "$T/dst.img" \
        blocksize-minimum="$min" blocksize-preferred=65536 blocksize-error-policy=error \
        logfile="$log"
    "$NBDCOPY" - "$DST" <"$T/stream.img" 2>"$T/e" ||
        fail "stream, min=$min: $(cat "$T/e")"
    check_log_later "$log" "$min" 0 "stream, min=$min"
    stop_server dst
    assert_same_file "$T/expect.img" "$T/dst.img" "stream ending mid-block, min=$min"
done

msg "--request-size below the destination's minimum: refused, nothing written"
start_nbdkit dst --filter=log --filter=blocksize-policy memory "$size" \
    blocksize-minimum=65536 blocksize-preferred=65536 blocksize-error-policy=error \
    logfile="$T/dst.log"
expect_fail "$NBDCOPY" --request-size=4K "$SRC" "$DST"
assert_err_contains "--request-size=4096: smaller than"
assert_err_contains "minimum block size 65536"
[[ $(log_count "$T/dst.log" Write) -eq 0 && $(log_count "$T/dst.log" Zero) -eq 0 ]] ||
    fail "the refused copy wrote to the destination"
stop_server dst

msg "the request logs of the $n copies: no request broke the rules"
mapfile -t bads < <(logtool "${LOG_ARGS[@]:0:${#LOG_ARGS[@]}-1}")
((${#bads[@]} == n)) || fail "logtool gave ${#bads[@]} answers for $n logs"
for ((i = 0; i < n; i++)); do
    [[ ${bads[i]} -eq 0 ]] || fail "${LOG_WHAT[i]}: ${bads[i]} requests broke the rules"
done
msg PASS
