#!/usr/bin/env bash
# The connections a copy opens after its first one (-C 2: one helper; a
# third would be planned away on a machine with two CPUs)
# that cannot be opened, --retry's attempts included, leave their work to
# the first: the copy succeeds, byte-identical, and says so.  A proxy in
# front of qemu-nbd lets the first connection through and cuts every later
# one as soon as the server accepted it.  -v prints one line for each
# helper, "nbdcopy: connection N of 3 could not be opened (its work went
# to the others): URI: WHY" (WHY: the cut, or with --retry=1 the attempt
# that failed too), and --json counts them: connections_failed 1, workers
# 1.  A copy whose helpers all connect counts connections_failed 0.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
source "$TEST_LIB/servers_lib.bash"
require_cmd qemu-nbd timeout

make_random_file "$T/src.img" $((8 * MiB))
start_server src qemu-raw tcp "$T/src.img" ro

# helpers_case LABEL WHY-ERE NBDCOPY-OPTIONS...
helpers_case() {
    local label=$1 why=$2 uri u n addr
    shift 2
    stop_server px
    _server_address_v addr src
    start_drop_proxy px "$addr" --first-conn 2 --drop-after 0 --drops all
    server_uri_at_v uri src "$PROXY_PORT"
    _re_quote_v u "$uri"
    rm -f "$T/out.img"
    retry_copy "$label" -v -C 2 "$@" "$uri" "$T/out.img"
    assert_server_alive src "$label"
    [[ $RC -eq 0 ]] || fail "$label: the copy failed (exit status $RC): $(copy_error "$label")"
    cmp "$T/src.img" "$T/out.img" || fail "$label: the copy differs from the source"
    for n in 2; do
        [[ $(retry_count "$label" "^nbdcopy: connection $n of 2 could not be opened \(its work went to the others\): $u: ($why)\$") -eq 1 ]] ||
            fail "$label: no line for connection $n /could not be opened ...: $u: ($why)/: $(grep 'could not be opened' "$T/$label.err")"
    done
    [[ $(retry_json "$label" '(r["connections"], r["workers"], r["connections_failed"])') == "(2, 1, 1)" ]] ||
        fail "$label: --json: $(cat "$T/$label.json")"
}

# (libnbd may meet the cut inside nbd_aio_connect_uri itself.)
cut='nbd_aio_[a-z_]+: recv: server disconnected unexpectedly'
helpers_case no-retry "$cut"
helpers_case retry "the connection was lost \($cut\) and could not be re-established in 1 attempt \(--retry=1\): $cut" --retry=1

msg "every helper connects: connections_failed 0"
rm -f "$T/out.img"
retry_copy all -v -C 2 "$(server_uri src)" "$T/out.img"
[[ $RC -eq 0 ]] || fail "all: the copy failed: $(copy_error all)"
[[ $(retry_json all '(r["workers"], r["connections_failed"])') == "(2, 0)" ]] ||
    fail "all: --json: $(cat "$T/all.json")"
[[ $(retry_count all "could not be opened") -eq 0 ]] || fail "all: a connection is said to have failed"
msg PASS
