#!/usr/bin/env bash
# NBD URIs that cannot be connected to fail cleanly (one "nbdcopy: " line,
# no crash): a socket path that does not exist as source (no destination
# file created) and as destination; a stale socket file nobody listens on;
# a malformed URI.
source "$(dirname "$0")/lib.sh"

make_random_file "$T/src.img" "$MiB"

msg "source socket does not exist"
expect_fail "$NBDCOPY" "nbd+unix:///?socket=/nonexistent/sock" "$T/out.img"
[[ ! -e $T/out.img ]] || fail "destination file created for a bad source URI"

msg "destination socket does not exist"
expect_fail "$NBDCOPY" "$T/src.img" "nbd+unix:///?socket=/nonexistent/sock"

msg "stale socket file, nobody listening"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' \
    "$T/stale.sock" 2>/dev/null || skip_stale=1
if [[ -z ${skip_stale:-} ]]; then
    expect_fail "$NBDCOPY" "nbd+unix:///?socket=$T/stale.sock" "$T/out.img"
    [[ ! -e $T/out.img ]] || fail "destination file created for a stale socket"
fi

msg "malformed URI"
expect_fail "$NBDCOPY" "nbd+unix://[bad/?socket=$T/x.sock" "$T/out.img"
[[ ! -e $T/out.img ]] || fail "destination file created for a malformed URI"
msg PASS
