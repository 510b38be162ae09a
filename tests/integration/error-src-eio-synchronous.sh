#!/usr/bin/env bash
# Read errors on the source in the synchronous copier (--synchronous, and
# the pipe destination which forces it) fail the copy with a clean one-line
# "nbdcopy: URI: read at offset N length N: Input/output error".
# (nbdcopy 1.14.2 prints this one without the "nbdcopy: " prefix: it fails.)
source "$(dirname "$0")/lib/lib.sh"

size=$((4 * MiB))
start_nbdkit src --filter=error -r pattern size="$size" error-pread-rate=1 error=EIO

msg "--synchronous nbd -> file, every read fails"
expect_fail "$NBDCOPY" --synchronous "$(uri_for src)" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for src)"): read at offset [0-9]+ length [0-9]+: Input/output error\$"

msg "nbd -> stdout (pipe), every read fails"
rc=0
"$NBDCOPY" "$(uri_for src)" - 2>"$T/cmd.err" | cat >/dev/null || rc=$?
ERR=$(cat "$T/cmd.err")
[[ $rc -ne 0 && $rc -lt 128 ]] || fail "exit status $rc copying a failing source to a pipe"
[[ $ERR == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $ERR"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for src)"): read at offset [0-9]+ length [0-9]+: Input/output error\$"

msg "nbd -> file, 10% of reads fail, --synchronous --request-size=65536"
stop_server src
start_nbdkit src --filter=error -r pattern size=$((8 * MiB)) error-pread-rate=0.1 error=EIO
expect_fail "$NBDCOPY" --synchronous --request-size=65536 "$(uri_for src)" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for src)"): read at offset [0-9]+ length [0-9]+: Input/output error\$"
msg PASS
