#!/usr/bin/env bash
# Invalid option values are rejected with a clean one-line error and no
# destination file is created: --request-size not a power of 2 / too small /
# too large, -C 0, -R 0, -T 0?, --sparse not a power of 2 / below 512,
# --queue-size=0?, unknown option, missing operand, too many operands.
source "$(dirname "$0")/lib.sh"

make_random_file "$T/src.img" "$MiB"

bad() { # OPTIONS...
    rm -f "$T/out.img"
    expect_fail "$NBDCOPY" "$@" "$T/src.img" "$T/out.img"
    [[ ! -e $T/out.img ]] || fail "destination created despite bad options: $*"
}

bad --request-size=1000
bad --request-size=2048
bad --request-size=$((64 * MiB))
bad --request-size=abc
bad -C 0
bad --connections=0
bad -R 0
bad --requests=0
bad --sparse=100
bad --sparse=1000
bad -S 256
bad --no-such-option
bad -C

msg "missing operand"
expect_fail "$NBDCOPY" "$T/src.img"
msg "no operands"
expect_fail "$NBDCOPY"
msg "too many operands"
expect_fail "$NBDCOPY" "$T/src.img" "$T/out.img" "$T/third.img"
[[ ! -e $T/out.img && ! -e $T/third.img ]] || fail "file created with too many operands"

msg "valid edge values are accepted"
for opt in --request-size=4096 --request-size=$((32 * MiB)) --sparse=0 --sparse=512 -R 1 -C 1; do
    rm -f "$T/out.img"
    run_copy $opt "$T/src.img" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "copy with $opt"
done
msg PASS
