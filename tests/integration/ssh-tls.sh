#!/usr/bin/env bash
# nbds+ssh://: TLS required inside the ssh tunnel, a PSK (tls-psk-file=)
# and the URI's user as the TLS user name (alice), never ssh's login:
# copies both ways, byte for byte, with a server that requires TLS. An
# nbd+ssh:// URI to a server that requires TLS, an nbds+ssh:// URI to one
# without TLS, and a TLS user the key file lacks fail with TLS's words.
# Skips without root (sshd).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/ssh_lib.bash"
require_cmd nbdkit
make_psk
start_sshd

make_test_file "$T/src.img" $((4 * MiB))
size=$(stat -c %s "$T/src.img")
start_nbdkit tls --tls=require --tls-psk="$PSK_FILE" memory size="$size"
tls_ssh_uri() { # USER NAME
    echo "nbds+ssh://${1:+$1@}$SSH_HOST:$SSH_PORT/?socket=$T/$2.sock&tls-psk-file=$PSK_FILE"
}

run_copy "$T/src.img" "$(tls_ssh_uri alice tls)"
run_copy --synchronous "$(tls_ssh_uri alice tls)" "$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "nbds+ssh round trip"
[[ $(ssh_argv "$(ssh_runs)") == "-p $SSH_PORT $SSH_HOST nc -U $T/tls.sock" ]] ||
    fail "ssh ran as '$(ssh_argv "$(ssh_runs)")' (the TLS user is not ssh's)"

_run_failing "no TLS to a TLS server" 5 "$NBDCOPY" "$(ssh_uri tls)" null:
assert_err_contains "the server requires TLS"
start_nbdkit plain memory size="$size"
_run_failing "TLS to a plain server" 5 "$NBDCOPY" "$(tls_ssh_uri alice plain)" null:
assert_err_contains "the server does not offer TLS"
_run_failing "an unknown TLS user" 5 "$NBDCOPY" "$(tls_ssh_uri mallory tls)" null:
assert_err_contains "username mallory was not found in PSK file"
[[ $ERR != *"ssh exited"* ]] || fail "ssh's clean exit (we hung up) reported as news: $ERR"
msg PASS
