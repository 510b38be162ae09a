#!/usr/bin/env bash
# -v with a URI carrying a password (nbd+unix://alice:s3cret@/...): the copy
# works and the password never appears on stderr.
# (nbdcopy 1.14.2 prints the URI verbatim, password included: it fails.)
source "$(dirname "$0")/lib/lib.sh"

size=$((MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit dst memory size="$size"
uri="nbd+unix://alice:s3cret@/?socket=$(sock_for dst)"

"$NBDCOPY" -v "$T/src.img" "$uri" 2>"$T/err.txt" ||
    fail "copy to $uri failed: $(grep -v 'libnbd: debug' "$T/err.txt" | head -c 500)"
assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "copy to a URI with a password"
if grep -q s3cret "$T/err.txt"; then
    fail "password printed on stderr: $(grep s3cret "$T/err.txt" | head -3)"
fi
msg PASS
