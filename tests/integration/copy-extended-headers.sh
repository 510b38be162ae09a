#!/usr/bin/env bash
# Extended headers (64-bit requests and replies, negotiated by qemu 8.2+
# with libnbd 1.18+): with qemu-nbd 10 and libnbd 1.22 (Debian 13) every
# connection of a copy negotiates them (libnbd's debug line under -v, one
# per connection of the plan), and copies through them, reads and block
# status from a qcow2 source, writes and zeroes to a qemu-nbd destination,
# are byte-identical, on both engines. Skips where nbdinfo says the pair
# does not negotiate them (Debian 12: qemu 7.2, libnbd 1.14).
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img qemu-nbd

size=$((6 * MiB + 4096))
make_test_file "$T/src.img" "$size"
qemu-img convert -q -f raw -O qcow2 "$T/src.img" "$T/src.qcow2"
start_qemu_nbd src -t --shared=8 -r -f qcow2 "$T/src.qcow2"

require_extended_headers "$(uri_for src)"

# copy_v ARGS...: a -v copy that must succeed, its stderr (libnbd's debug
# lines: thousands) kept in $T/cmd.err, not shown.
copy_v() {
    msg "run: nbdcopy -v $*"
    "$NBDCOPY" -v "$@" 2>"$T/cmd.err" || fail "nbdcopy -v $* failed: $(grep -v '^libnbd' "$T/cmd.err" | tail -n 5)"
}

# assert_extended_on_every_connection WHAT SIDES: the -v run's stderr in
# $T/cmd.err has libnbd's "negotiated extended headers" once per
# connection the plan line names for each NBD side (SIDES of them).
assert_extended_on_every_connection() { # WHAT SIDES
    verbose_lines "$T/cmd.err"
    [[ $PLAN_LINE =~ connections=([0-9]+) ]] || fail "$1: no plan line in -v output"
    local connections=${BASH_REMATCH[1]} negotiated
    negotiated=$(grep -c "negotiated extended headers on this connection" "$T/cmd.err" || true)
    [[ $negotiated -eq $((connections * $2)) ]] ||
        fail "$1: extended headers negotiated on $negotiated connections, expected $((connections * $2)) ($PLAN_LINE)"
    ! grep -q "extended headers are not supported" "$T/cmd.err" ||
        fail "$1: a connection went without extended headers"
    msg "$1: extended headers on all $((connections * $2)) connections"
}

msg "qcow2 through qemu-nbd (extended headers) -> file"
copy_v "$(uri_for src)" "$T/out.img"
assert_extended_on_every_connection "qemu-nbd -> file" 1
assert_same_file "$T/src.img" "$T/out.img" "qemu-nbd (extended headers) -> file"

msg "file -> qemu-nbd raw destination, -C 4: writes and zeroes"
head -c "$size" /dev/urandom >"$T/dst.img"   # old data everywhere: zeroes must land
start_qemu_nbd dst -t --shared=4 -f raw "$T/dst.img"
copy_v -C 4 "$T/src.img" "$(uri_for dst)"
assert_extended_on_every_connection "file -> qemu-nbd" 1
stop_server dst
assert_same_file "$T/src.img" "$T/dst.img" "file -> qemu-nbd (extended headers)"

msg "qemu-nbd -> qemu-nbd qcow2, --synchronous"
qemu-img create -q -f qcow2 "$T/dst.qcow2" "$size"
start_qemu_nbd dst2 -f qcow2 "$T/dst.qcow2"
copy_v --synchronous "$(uri_for src)" "$(uri_for dst2)"
assert_extended_on_every_connection "qemu-nbd -> qemu-nbd, synchronous" 2
stop_server dst2
qemu-img compare -q -f raw -F qcow2 "$T/src.img" "$T/dst.qcow2" ||
    fail "qemu-nbd -> qemu-nbd (extended headers): the qcow2 differs from the source"
msg PASS
