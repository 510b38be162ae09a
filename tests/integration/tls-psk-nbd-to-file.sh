#!/usr/bin/env bash
# TLS (PSK) NBD source to a file: byte-identical.  The server requires TLS,
# so a copy that silently fell back to plaintext could not connect at all.
# A wrong key is refused with one line that asks whether the server has
# the same key for that user, and nothing is created.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"
make_psk

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit tls --tls=require --tls-psk="$PSK_FILE" -r file "$T/src.img"

msg "nbds+unix (PSK) -> file"
run_copy "$(tls_uri_for tls)" "$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "TLS source"

msg "the server really refuses a plaintext client"
if qemu-img convert -f raw -O raw "$(uri_for tls)" "$T/plain.img" 2>/dev/null; then
    fail "server accepted a plaintext client: the test setup is wrong"
fi
msg "a wrong PSK is refused"
psktool -u alice -p "$T/wrong.psk" >/dev/null 2>&1
expect_fail "$NBDCOPY" "nbds+unix://alice@/?socket=$(sock_for tls)&tls-psk-file=$T/wrong.psk" "$T/out2.img"
assert_err_contains "does the server have the same key for this user as $T/wrong.psk?"
[[ ! -e $T/out2.img ]] || fail "destination file created although the source could not be opened"
msg PASS
