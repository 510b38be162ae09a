#!/usr/bin/env bash
# Invalid option values are rejected with a clean one-line "nbdcopy: " error
# naming the option and what is wrong with the value, and no destination
# file is created: --request-size not a power of 2, too
# small, too large or not a number; -C 0; -R 0; --sparse not a power of 2 or
# below 512.  Command line errors (unknown option, missing option argument,
# missing or extra operands) fail with a usage message that names the
# option or counts the operands.  Edge values that
# are valid are accepted.
source "$(dirname "$0")/lib/lib.sh"

make_random_file "$T/src.img" "$MiB"

bad() { # MESSAGE OPTIONS...: refused with exactly "nbdcopy: MESSAGE"
    local want=$1; shift
    rm -f "$T/out.img"
    expect_fail "$NBDCOPY" "$@" "$T/src.img" "$T/out.img"
    [[ $ERR == "nbdcopy: $want" ]] || fail "$*: expected 'nbdcopy: $want', got '$ERR'"
    [[ ! -e $T/out.img ]] || fail "destination created despite bad options: $*"
}

request_range="--request-size: must be a power of 2 from 4096 to $((32 * MiB))"
bad "$request_range" --request-size=1000
bad "$request_range" --request-size=2048
bad "$request_range" --request-size=$((64 * MiB))
bad "--request-size: not a size: 'abc'" --request-size=abc
bad "--connections: must be at least 1" -C 0
bad "--connections: must be at least 1" --connections=0
bad "--requests: must be at least 1" -R 0
bad "--requests: must be at least 1" --requests=0
bad "--sparse: must be 0 or a power of 2 >= 512" --sparse=100
bad "--sparse: must be 0 or a power of 2 >= 512" --sparse=1000
bad "--sparse: must be 0 or a power of 2 >= 512" -S 256

rm -f "$T/out.img"
expect_usage_error "$NBDCOPY" --no-such-option "$T/src.img" "$T/out.img"
assert_err_contains "--no-such-option: unknown option"
[[ ! -e $T/out.img ]] || fail "destination created despite an unknown option"
expect_usage_error "$NBDCOPY" "$T/src.img" "$T/out.img" -C
assert_err_contains "--connections: requires a value"
[[ ! -e $T/out.img ]] || fail "destination created despite a missing option argument"
expect_usage_error "$NBDCOPY" "$T/src.img"
assert_err_contains "expected SOURCE and DESTINATION, got 1 operand"
expect_usage_error "$NBDCOPY"
assert_err_contains "expected SOURCE and DESTINATION, got 0 operands"
# (nbdcopy 1.14.2 creates the second operand before noticing the third, so
# file creation is not checked here.)
expect_usage_error "$NBDCOPY" "$T/src.img" "$T/out.img" "$T/third.img"
assert_err_contains "expected SOURCE and DESTINATION, got 3 operands"
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
