#!/usr/bin/env bash
# --retry under TLS (PSK): nbdkit on TCP requiring TLS, behind
# drop_proxy.py (a byte proxy: TLS passes through it), a connection closed,
# reset or silenced (--timeout=2) mid-copy, once or twice, source and
# destination, both engines.  With --retry the copy is byte-identical, each
# drop is one reconnection ("URI: connection lost (REASON); reconnecting
# (attempt 1 of N)", "URI: reconnected (attempt 1 of N)", --json
# reconnections), and the new connection is TLS again (-v: libnbd's
# "connection is using TLS" once more than the copy's connections).
# Without --retry the drop fails the copy with one line.  No output holds
# the key.
# labels: tls
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
require_cmd nbdkit timeout
make_psk

# What a dropped TLS connection is reported as: the TLS layer's own error
# for the bytes that stopped in the middle of a record, or as without TLS.
close_reason="nbd_aio_notify_read: (recv: server disconnected unexpectedly|gnutls_record_recv: [^)]+)|the server closed the connection"
reset_reason="nbd_aio_[a-z_]+: (recv|send|gnutls_record_recv|gnutls_record_send): [^)]+"

# One thread per connection (-t 1): with several, nbdkit 1.32 aborts now
# and then when a TLS connection ends while a reply is being encrypted
# ("nettle_chacha_poly1305_encrypt: Assertion ... failed"), and the test
# needs the server alive.
size=$((24 * MiB))
make_test_file "$T/src.img" "$size"
start_nbdkit_tcp src -t 1 --tls=require --tls-psk="$PSK_FILE" -r file "$T/src.img"
src_port=$TCP_PORT
make_random_file "$T/wsrc.img" "$size"
truncate -s "$size" "$T/dst.img"
start_nbdkit_tcp dst -t 1 --tls=require --tls-psk="$PSK_FILE" file "$T/dst.img"
dst_port=$TCP_PORT

if command -v nbdinfo >/dev/null 2>&1; then
    ! nbdinfo "nbd://127.0.0.1:$src_port/" >/dev/null 2>&1 ||
        fail "the server accepts a plaintext client: the test setup is wrong"
fi

tls_uri() { echo "nbds://alice@127.0.0.1:$1/?tls-psk-file=$PSK_FILE"; }

n=0
# tls_case SIDE MODE DROPS REASON PROXY-OPTIONS -- NBDCOPY-OPTIONS...
tls_case() {
    local side=$1 mode=$2 drops=$3 reason=$4 proxy=() port=$src_port
    shift 4
    while [[ $1 != -- ]]; do proxy+=("$1"); shift; done
    shift
    n=$((n + 1))
    local label=t$n
    [[ $side == destination ]] && port=$dst_port
    stop_server px
    start_drop_proxy px "$port" --mode "$mode" "${proxy[@]}"
    local uri
    uri=$(tls_uri "$PROXY_PORT")
    msg "case $label: $side, $mode, $drops drop(s), $*"
    if [[ $side == source ]]; then
        rm -f "$T/out.img"
        retry_copy "$label" --retry=3 "$@" "$uri" "$T/out.img"
    else
        : >"$T/dst.img"
        truncate -s "$size" "$T/dst.img"
        retry_copy "$label" --retry=3 "$@" "$T/wsrc.img" "$uri"
    fi
    [[ $RC -eq 0 ]] || fail "$label: the copy failed (exit status $RC): $(copy_error "$label")"
    proxy_drops_v "$PROXY_LOG"
    [[ $PROXY_DROPS -eq $drops ]] ||
        fail "$label: the proxy dropped $PROXY_DROPS connections, the test wanted $drops"
    assert_recovered "$label" "$uri" 3 "$drops" "$reason"
    if [[ " $* " == *" -v "* ]]; then
        local tls conns
        tls=$(retry_count "$label" "connection is using TLS")
        retry_json_v conns "$label" 'r["connections"]'
        ((tls >= 1 + drops && tls <= conns + drops)) ||
            fail "$label: $tls TLS connections for $conns connections and $drops reconnections"
    fi
    if [[ $side == source ]]; then
        assert_same_file "$T/src.img" "$T/out.img" "$label: TLS source, $mode"
    else
        assert_same_file "$T/wsrc.img" "$T/dst.img" "$label: TLS destination, $mode"
    fi
}

tls_case source close 1 "$close_reason" --drop-after 6M -- -v
tls_case source reset 1 "$reset_reason" --drop-after 6M -- --synchronous -v
tls_case source silence 1 "$RETRY_REASON_SILENCE" --drop-after 6M -- --timeout=2 -p
tls_case source close 2 "$close_reason" --drop-after 5M --drops 2 -- -C 1 -p
tls_case destination close 1 "$close_reason" --drop-after 8M -- -v
tls_case destination reset 1 "$reset_reason" --drop-after 8M -- --synchronous -p

msg "without --retry"
stop_server px
start_drop_proxy px "$src_port" --mode close --drop-after 6M
uri=$(tls_uri "$PROXY_PORT")
retry_copy nr "$uri" "$T/out.img"
_re_quote_v u "$uri"
assert_one_line_failure nr \
    "^nbdcopy: $u: (read|extents) at offset [0-9]+ length [0-9]+: ($close_reason)\$"
assert_no_reconnect nr

mkdir -p "$T/outputs"
cp "$T"/*.err "$T"/*.json "$T/outputs/"
assert_no_secrets "$PSK_KEY"
msg PASS
