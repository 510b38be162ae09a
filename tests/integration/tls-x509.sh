#!/usr/bin/env bash
# TLS with x509 certificates made here by certtool, servers from
# nbdkit --tls=require --tls-certificates=DIR, clients through
# nbds://...?tls-certificates=DIR[&tls-verify-peer=...]:
#  - TCP (nbds://localhost:PORT), the right CA: a byte-identical copy, and
#    libnbd's debug output says the connection uses TLS;
#  - a CA that did not sign the server's certificate, or a certificate issued
#    for another host: one clear line, nothing written; the same with
#    tls-verify-peer=false copies (the parameter is ours: libnbd 1.14 ignores
#    it), so the failure was the check;
#  - a server that wants a client certificate: copies with one, fails
#    without;
#  - a Unix socket: copies (encrypted, unchecked: no host name), and
#    tls-verify-peer=true there is refused rather than ignored;
#  - a missing certificates directory (libnbd would fall back to the
#    system CAs) and a plain nbd:// attempt: clear errors;
#  - no private key's contents in any output of any run.
# labels: security
source "$(dirname "$0")/lib/lib.sh"

size=$((3 * MiB + 1234))
make_test_file "$T/src.img" "$size"
make_ca "$T/ca"
make_ca "$T/wrong-ca"
make_server_pki "$T/ca" "$T/srv-localhost" localhost
make_server_pki "$T/ca" "$T/srv-other" other.example
make_client_pki "$T/ca" "$T/cli"
make_client_pki "$T/wrong-ca" "$T/cli-wrong"
make_client_pki "$T/ca" "$T/cli-cert" client
keys=("$T"/*/*-key.pem)

# copy_ok LABEL URI [OPTIONS...]: URI -> $T/out.img succeeds, identical.
copy_ok() {
    local label=$1 uri=$2; shift 2
    rm -f "$T/out.img"
    run_kept "$label" "$NBDCOPY" "$@" "$uri" "$T/out.img"
    [[ $RC -eq 0 ]] || fail "$label: exited $RC: $ERR"
    assert_same_file "$T/src.img" "$T/out.img" "$label"
}
# copy_fails LABEL URI TEXT: one clear line containing TEXT, no destination.
copy_fails() {
    rm -f "$T/out.img"
    run_kept "$1" "$NBDCOPY" "$2" "$T/out.img"
    expect_one_line_failure
    assert_err_contains "$3"
    [[ ! -e $T/out.img ]] || fail "$1: destination created by a failed connection"
}

start_nbdkit_tcp good --tls=require --tls-certificates="$T/srv-localhost" -r file "$T/src.img"
good=nbds://localhost:$TCP_PORT/
copy_ok tcp-right-ca "$good?tls-certificates=$T/cli" -v
grep -q "connection is using TLS" "$T/outputs/tcp-right-ca.err" ||
    fail "libnbd's debug output does not show a TLS connection"
copy_ok tcp-verify-true "$good?tls-certificates=$T/cli&tls-verify-peer=true"
copy_fails tcp-wrong-ca "$good?tls-certificates=$T/cli-wrong" \
    "the server's certificate is not trusted: it is not signed by the CA in tls-certificates=$T/cli-wrong"
copy_ok tcp-wrong-ca-unchecked "$good?tls-certificates=$T/cli-wrong&tls-verify-peer=false"
copy_fails tcp-no-ca-file "$good?tls-certificates=$T/nonexistent" \
    "tls-certificates=$T/nonexistent: cannot read $T/nonexistent/ca-cert.pem"
copy_fails tcp-plain "nbd://localhost:$TCP_PORT/" "the server requires TLS: use an nbds:// URI"
stop_server good

start_nbdkit_tcp other --tls=require --tls-certificates="$T/srv-other" -r file "$T/src.img"
other=nbds://localhost:$TCP_PORT/
copy_fails tcp-wrong-host "$other?tls-certificates=$T/cli" "or not issued for localhost"
copy_ok tcp-wrong-host-unchecked "$other?tls-certificates=$T/cli&tls-verify-peer=no"
stop_server other

start_nbdkit_tcp clientauth --tls=require --tls-certificates="$T/srv-localhost" \
    --tls-verify-peer -r file "$T/src.img"
copy_ok tcp-client-cert "nbds://localhost:$TCP_PORT/?tls-certificates=$T/cli-cert" -v
copy_fails tcp-no-client-cert "nbds://localhost:$TCP_PORT/?tls-certificates=$T/cli" \
    "wants a client certificate it trusts (client-cert.pem and client-key.pem in tls-certificates=DIR)"
stop_server clientauth

start_nbdkit unix --tls=require --tls-certificates="$T/srv-localhost" -r file "$T/src.img"
unix_uri="nbds+unix:///?socket=$(sock_for unix)&tls-certificates=$T/cli"
copy_ok unix "$unix_uri" -v
grep -q "connection is using TLS" "$T/outputs/unix.err" ||
    fail "libnbd's debug output does not show a TLS connection over the Unix socket"
copy_fails unix-verify-true "$unix_uri&tls-verify-peer=true" \
    "tls-verify-peer=true: libnbd checks a certificate against a host name"

assert_no_secrets "${keys[@]}"
msg PASS
