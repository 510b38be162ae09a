#!/usr/bin/env bash
# Connections, counted by the nbdkit log filter on both servers ("connection=N
# Connect ..." when a client finishes its handshake; every request line
# carries its connection number):
#  - -C 4 -T 4 between two multi-conn servers: more than one and at most 4
#    connections on each side, and more than one of them carries Reads
#    (source) and Writes (destination): the work is really shared.  Reads
#    are delayed 20 ms, so one connection could not do it all before the
#    others are up;
#  - multi-conn turned off (nbdkit --filter=multi-conn multi-conn-mode=disable)
#    on the source, or on the destination: exactly 1 connection each side;
#  - a "[ nbdkit ... ]" source (socket activation, one connection): exactly 1;
#  - --synchronous: exactly 1.
# The copy is identical to the source every time.  The destination is a
# file served by nbdkit's file plugin: cmp reads it after the server has
# stopped, no read-back through NBD (a qemu-img start and 64 MiB more).
#
# The image is 64 MiB with half of it data: the engine hands out 8 requests
# (8 MiB of data at the default 1 MiB) at a time, so that is 4 batches, one
# for each connection; at 32 MiB only 2 connections could be busy, and at
# 16 MiB one took it all.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img python3

size=$((64 * MiB))
# Data with holes: sparse-random, kept as a reference file.  nbdkit's file
# plugin advertises multi-conn.
start_nbdkit ref -r sparse-random size="$size" percent=50 seed=11 runlength=500000
nbd_to_file "$(uri_for ref)" "$size" "$T/src.ref"
stop_server ref

# Source: the same bytes from a file (fast to serve), reads delayed.
SRC_PLUGIN=(file "$T/src.ref")

# run_case NAME WANT-SRC WANT-DST SRC-MC DST-MC OPTIONS...
#   WANT-*: "1" (exactly one connection) or "many" (2..4, several busy).
#   SRC-MC: on | off (multi-conn filter in disable mode) | command (the
#           source is "[ nbdkit ... ]", started by nbdcopy itself)
#   DST-MC: on | off
run_case() {
    local name=$1 want_src=$2 want_dst=$3 src_mc=$4 dst_mc=$5; shift 5
    local slog=$T/$name-src.req dlog=$T/$name-dst.req
    local sfilt=() dfilt=()
    [[ $src_mc == off ]] && sfilt=(--filter=multi-conn multi-conn-mode=disable)
    [[ $dst_mc == off ]] && dfilt=(--filter=multi-conn multi-conn-mode=disable)
    : >"$T/dst.img" # (empty: no byte of the last case's copy is left)
    truncate -s "$size" "$T/dst.img"
    start_nbdkit dst --filter=log "${dfilt[@]:0:1}" file "$T/dst.img" \
        "${dfilt[@]:1}" logfile="$dlog"
    local src
    if [[ $src_mc == command ]]; then
        src=(-- '[' nbdkit --filter=log --filter=delay -r "${SRC_PLUGIN[@]}"
             delay-read=20ms logfile="$slog" ']')
    else
        start_nbdkit src --filter=log "${sfilt[@]:0:1}" --filter=delay -r \
            "${SRC_PLUGIN[@]}" "${sfilt[@]:1}" delay-read=20ms logfile="$slog"
        src=("$(uri_for src)")
    fi
    run_copy "$@" "${src[@]}" "$(uri_for dst)"
    local counts sc dc sr dw # (one python start for the four counts)
    counts=$(logtool connects "$slog" -- conns "$slog" Read -- \
        connects "$dlog" -- conns "$dlog" Write)
    read -r sc sr dc dw <<<"${counts//$'\n'/ }"
    msg "  $name: source $sc connections ($sr reading), destination $dc ($dw writing)"
    [[ $src_mc == command ]] || stop_server src
    stop_server dst
    cmp -s "$T/src.ref" "$T/dst.img" || fail "$name: the copy differs from the source"

    local side want c busy
    for side in src dst; do
        if [[ $side == src ]]; then want=$want_src c=$sc busy=$sr
        else want=$want_dst c=$dc busy=$dw; fi
        if [[ $want == 1 ]]; then
            [[ $c -eq 1 ]] || fail "$name: $c $side connections, expected exactly 1"
        else
            ((c >= 2 && c <= 4)) || fail "$name: $c $side connections, expected 2..4"
            ((busy >= 2)) || fail "$name: only $busy $side connection(s) carried I/O"
        fi
    done
}

run_case both-mc      many many on      on  -C 4 -T 4
run_case both-mc-C2   many many on      on  -C 2 -T 2 -R 4
run_case src-no-mc    1    1    off     on  -C 4 -T 4
run_case dst-no-mc    1    1    on      off -C 4 -T 4
run_case command-src  1    1    command on  -C 4 -T 4
run_case synchronous  1    1    on      on  -C 4 -T 4 --synchronous
msg PASS
