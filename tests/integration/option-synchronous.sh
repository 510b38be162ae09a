#!/usr/bin/env bash
# --synchronous: file -> nbd and nbd -> file copy correctly, and only one
# connection is opened to each NBD server (nbdkit log filter).
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "--synchronous file -> nbd"
start_nbdkit dst --filter=log memory size="$size" logfile="$T/dst-requests.txt"
run_copy --synchronous "$T/src.img" "$(uri_for dst)"
assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "--synchronous file -> nbd"

msg "--synchronous nbd -> file"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/src-requests.txt"
run_copy --synchronous "$(uri_for src)" "$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "--synchronous nbd -> file"
stop_server src
stop_server dst

# The destination log also has the qemu-img read-back connection.
n=$(grep -c ' Connect ' "$T/src-requests.txt" || true)
[[ $n -eq 1 ]] || fail "--synchronous opened $n connections to the source"
n=$(grep -c ' Connect ' "$T/dst-requests.txt" || true)
[[ $n -eq 2 ]] || fail "--synchronous opened $((n - 1)) connections to the destination"
msg PASS
