#!/usr/bin/env bash
# Block-size rules that no request can meet are refused before anything is
# written, with one line saying which endpoint's rule is in the way.
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

size=$((4 * MiB))
start_nbdkit src64k -r --filter=blocksize-policy sparse-random seed=2 size=$size \
    blocksize-minimum=65536 blocksize-preferred=65536 blocksize-error-policy=error
start_nbdkit dst32k --filter=log --filter=blocksize-policy memory "$size" \
    blocksize-minimum=512 blocksize-preferred=4096 blocksize-maximum=32768 \
    blocksize-error-policy=error logfile="$T/dst32k.log"
start_nbdkit plain -r sparse-random seed=2 size=$size

assert_nothing_written() {
    [[ $(log_count "$T/dst32k.log" Write) -eq 0 && $(log_count "$T/dst32k.log" Zero) -eq 0 &&
       $(log_count "$T/dst32k.log" Trim) -eq 0 ]] || fail "$1: the destination was written"
}

msg "a source minimum above the destination maximum"
expect_fail "$NBDCOPY" "$(uri_for src64k)" "$(uri_for dst32k)"
assert_err_contains "dst32k.sock: maximum block size 32768 is smaller than the minimum block size 65536"
assert_nothing_written "min > max"

msg "a blkhash block larger than the destination maximum"
expect_fail "$NBDCOPY" --blkhash=sha256/64K --blkhash-file="$T/sum" "$(uri_for plain)" \
    "$(uri_for dst32k)"
assert_err_contains "--blkhash: block size 65536 is larger than"
assert_err_contains "maximum block size 32768"
assert_nothing_written "blkhash"
[[ ! -e $T/sum ]] || fail "a digest file was written for a refused copy"

msg "a request size below the source minimum"
expect_fail "$NBDCOPY" --request-size=16K "$(uri_for src64k)" null:
assert_err_contains "--request-size=16384: smaller than"
assert_err_contains "minimum block size 65536"

msg "a short source onto a larger destination whose minimum cannot take the short tail"
start_nbdkit short -r sparse-random seed=2 size=$((MiB + 1000))
start_nbdkit dst64k --filter=log --filter=blocksize-policy memory "$size" \
    blocksize-minimum=65536 blocksize-preferred=65536 blocksize-error-policy=error \
    logfile="$T/dst64k.log"
expect_fail "$NBDCOPY" "$(uri_for short)" "$(uri_for dst64k)"
assert_err_contains "source size $((MiB + 1000)) is not a multiple of the destination's minimum block size 65536"
[[ $(log_count "$T/dst64k.log" Write) -eq 0 ]] || fail "short tail: the destination was written"
msg PASS
