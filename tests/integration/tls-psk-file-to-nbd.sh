#!/usr/bin/env bash
# File to a TLS (PSK) NBD destination pre-filled with random bytes:
# byte-identical.
source "$(dirname "$0")/lib/lib.sh"
make_psk

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
make_random_file "$T/dst.img" "$size"
start_nbdkit tls --tls=require --tls-psk="$PSK_FILE" file "$T/dst.img"

msg "file -> nbds+unix (PSK)"
run_copy "$T/src.img" "$(tls_uri_for tls)"
stop_server tls
assert_same_file "$T/src.img" "$T/dst.img" "TLS destination"
msg PASS
