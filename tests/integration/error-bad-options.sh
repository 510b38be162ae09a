#!/usr/bin/env bash
# Invalid option values are rejected with a clean one-line "nbdcopy: " error
# and no destination file is created: --request-size not a power of 2, too
# small, too large or not a number; -C 0; -R 0; --sparse not a power of 2 or
# below 512.  Command line errors (unknown option, missing option argument,
# missing or extra operands) fail with a usage message.  Edge values that
# are valid are accepted.
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

rm -f "$T/out.img"
expect_usage_error "$NBDCOPY" --no-such-option "$T/src.img" "$T/out.img"
[[ ! -e $T/out.img ]] || fail "destination created despite an unknown option"
expect_usage_error "$NBDCOPY" "$T/src.img" "$T/out.img" -C
[[ ! -e $T/out.img ]] || fail "destination created despite a missing option argument"
expect_usage_error "$NBDCOPY" "$T/src.img"
expect_usage_error "$NBDCOPY"
# (nbdcopy 1.14.2 creates the second operand before noticing the third, so
# file creation is not checked here.)
expect_usage_error "$NBDCOPY" "$T/src.img" "$T/out.img" "$T/third.img"
[[ ! -e $T/third.img ]] || fail "third operand created"

msg "valid edge values are accepted"
for opt in --request-size=4096 --request-size=$((32 * MiB)) --sparse=0 \
           --sparse=512 "-R 1" "-C 1" "-T 1" --queue-size=$((4 * MiB)); do
    rm -f "$T/out.img"
    # shellcheck disable=SC2086  # "-R 1" is meant to split into two words
    run_copy $opt "$T/src.img" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "copy with $opt"
done
msg PASS
