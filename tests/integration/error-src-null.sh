#!/usr/bin/env bash
# null: is only a destination: as a source it is rejected cleanly, with
# "null:: can only be used as the destination", and no destination file is
# created.
source "$(dirname "$0")/lib/lib.sh"

expect_fail "$NBDCOPY" null: "$T/out.img"
[[ $ERR == "nbdcopy: null:: can only be used as the destination" ]] || fail "unexpected message: $ERR"
[[ ! -e $T/out.img ]] || fail "destination file created"
expect_fail "$NBDCOPY" null: null:
[[ $ERR == "nbdcopy: null:: can only be used as the destination" ]] || fail "unexpected message: $ERR"
msg PASS
