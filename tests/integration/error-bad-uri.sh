#!/usr/bin/env bash
# NBD URIs that cannot be connected to fail cleanly (one "nbdcopy: " line
# naming the URI and the reason, no crash): a socket path that does not
# exist as source (no destination file created) and as destination
# ("connect: No such file or directory"); a stale socket file nobody
# listens on ("Connection refused"); a malformed URI ("unable to parse").
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

make_random_file "$T/src.img" "$MiB"

missing="nbd+unix:///?socket=/nonexistent/sock"
msg "source socket does not exist"
expect_fail "$NBDCOPY" "$missing" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "$missing"): .*connect: No such file or directory\$"
[[ ! -e $T/out.img ]] || fail "destination file created for a bad source URI"

msg "destination socket does not exist"
expect_fail "$NBDCOPY" "$T/src.img" "$missing"
assert_err_matches "^nbdcopy: $(re_quote "$missing"): .*connect: No such file or directory\$"

msg "stale socket file, nobody listening"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' \
    "$T/stale.sock" 2>/dev/null || skip_stale=1
if [[ -z ${skip_stale:-} ]]; then
    expect_fail "$NBDCOPY" "nbd+unix:///?socket=$T/stale.sock" "$T/out.img"
    assert_err_matches "^nbdcopy: $(re_quote "nbd+unix:///?socket=$T/stale.sock"): .*connect: Connection refused\$"
    [[ ! -e $T/out.img ]] || fail "destination file created for a stale socket"
fi

msg "malformed URI"
expect_fail "$NBDCOPY" "nbd+unix://[bad/?socket=$T/x.sock" "$T/out.img"
assert_err_matches "^nbdcopy: $(re_quote "nbd+unix://[bad/?socket=$T/x.sock"): .*unable to parse URI"
[[ ! -e $T/out.img ]] || fail "destination file created for a malformed URI"
msg PASS
