#!/usr/bin/env bash
# -C / -T: the number of NBD connections (counted by the nbdkit log filter)
# follows the options when both servers advertise multi-conn, and falls to
# one when the destination does not.  The copy is correct every time.
source "$(dirname "$0")/lib/lib.sh"

size=$((4 * MiB + 1234))
make_test_file "$T/src.img" "$size"

try() { # WANT multi-conn|no-multi-conn NBDCOPY-OPTIONS...
    local want=$1 mc=$2; shift 2
    local filt=()
    [[ $mc == multi-conn ]] ||
        filt=(--filter=multi-conn memory size="$size" multi-conn-mode=disable)
    [[ $mc == no-multi-conn ]] || filt=(memory size="$size")
    rm -f "$T"/req-*.txt
    start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/req-src.txt"
    start_nbdkit dst --filter=log "${filt[@]}" logfile="$T/req-dst.txt"
    run_copy "$@" "$(uri_for src)" "$(uri_for dst)"
    stop_server src
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "copy with $*"
    stop_server dst
    local ns nd
    ns=$(grep -c ' Connect ' "$T/req-src.txt" || true)
    nd=$(( $(grep -c ' Connect ' "$T/req-dst.txt" || true) - 1 ))  # minus read-back
    msg "options '$*', destination $mc: $ns source / $nd destination connections"
    [[ $ns -eq $want && $nd -eq $want ]] ||
        fail "with '$*', destination $mc: expected $want connections each, got $ns / $nd"
}

try 1 multi-conn -C 1 -T 4
try 1 multi-conn -T 1 -C 4
try 3 multi-conn -C 3 -T 3
try 2 multi-conn --connections=2 --threads=2
try 1 no-multi-conn -C 3 -T 3
msg PASS
