#!/usr/bin/env bash
# null: is only a destination: as a source it is rejected cleanly and no
# destination file is created.
source "$(dirname "$0")/lib.sh"

expect_fail "$NBDCOPY" null: "$T/out.img"
[[ ! -e $T/out.img ]] || fail "destination file created"
expect_fail "$NBDCOPY" null: null:
msg PASS
