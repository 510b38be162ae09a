#!/usr/bin/env bash
# TLS with a pre-shared key (psktool), and secrets: no output of any run
# here, with or without -v, contains the PSK keys or the URI password.
#  - file -> nbds+unix (PSK), -v: identical, and the connection uses TLS;
#  - a source URI with a password (alice:PASSWORD@): copies (NBD has no
#    passwords: it is dropped before libnbd sees the URI, which would
#    otherwise take "alice:PASSWORD" as the user name and print it);
#  - the wrong key, a user missing from the file, a missing key file, a
#    plain nbd+unix:// attempt on the TLS server, nbds:// to a server
#    without TLS, a malformed URI with a password: one clear line each,
#    nothing written.
# labels: security
source "$(dirname "$0")/lib/lib.sh"
require_cmd psktool

make_psk
psktool -u alice -p "$T/other.psk" >/dev/null 2>&1 || fail "psktool failed"
OTHER_KEY=$(cut -d: -f2 "$T/other.psk")
password=Pa55-s3cret-w0rd

size=$((2 * MiB + 777))
make_test_file "$T/src.img" "$size"
make_random_file "$T/dst.img" "$size"
start_nbdkit tls --tls=require --tls-psk="$PSK_FILE" file "$T/dst.img"
start_nbdkit plain -r file "$T/src.img"
sock=$(sock_for tls)

run_kept to-tls "$NBDCOPY" -v "$T/src.img" "$(tls_uri_for tls)"
[[ $RC -eq 0 ]] || fail "file -> PSK server: exited $RC: $ERR"
grep -q "connection is using TLS" "$T/outputs/to-tls.err" || fail "no TLS in libnbd's debug output"

run_kept from-tls-password "$NBDCOPY" -v \
    "nbds+unix://alice:$password@/?socket=$sock&tls-psk-file=$PSK_FILE" "$T/back.img"
[[ $RC -eq 0 ]] || fail "PSK server with a URI password -> file: exited $RC: $ERR"
assert_same_file "$T/src.img" "$T/back.img" "copy through TLS and back"

# fails_cleanly LABEL TEXT SOURCE: SOURCE -> $T/out.img fails with one line
# containing TEXT and creates nothing; run again with -v for the secret check.
fails_cleanly() {
    local label=$1 text=$2 source=$3
    run_kept "$label" "$NBDCOPY" "$source" "$T/out.img"
    expect_one_line_failure
    assert_err_contains "$text"
    [[ ! -e $T/out.img ]] || fail "$label: destination created"
    run_kept "$label-v" "$NBDCOPY" -v "$source" "$T/out.img"
    [[ $RC -ne 0 && ! -e $T/out.img ]] || fail "$label -v: status $RC"
    grep -qF -- "$text" "$T/outputs/$label-v.err" || fail "$label -v: no message with '$text'"
}
fails_cleanly wrong-key "does the server have the same key for this user as $T/other.psk?" \
    "nbds+unix://alice:$password@/?socket=$sock&tls-psk-file=$T/other.psk"
fails_cleanly unknown-user "username bob was not found in PSK file" \
    "nbds+unix://bob:$password@/?socket=$sock&tls-psk-file=$PSK_FILE"
fails_cleanly missing-key-file "$T/missing.psk: No such file or directory" \
    "nbds+unix://alice:$password@/?socket=$sock&tls-psk-file=$T/missing.psk"
fails_cleanly plain-to-tls "the server requires TLS: use an nbds:// URI" \
    "nbd+unix://alice:$password@/?socket=$sock"
fails_cleanly tls-to-plain "the server does not offer TLS, which an nbds:// URI requires" \
    "nbds+unix://alice:$password@/?socket=$(sock_for plain)&tls-psk-file=$PSK_FILE"
fails_cleanly malformed "unable to parse URI" \
    "nbds+unix://alice:$password@[bad/?socket=$sock&tls-psk-file=$PSK_FILE"

stop_server tls
assert_same_file "$T/src.img" "$T/dst.img" "PSK destination"
assert_no_secrets "$PSK_KEY" "$OTHER_KEY" "$password"
msg PASS
