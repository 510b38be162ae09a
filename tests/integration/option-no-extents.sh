#!/usr/bin/env bash
# --no-extents: no block-status (Extents) request reaches the source, the
# whole source is read, and the copy is correct.  Without the option the
# source is asked for extents (so the check above means something).
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "--no-extents"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/requests1.txt"
run_copy --no-extents "$(uri_for src)" "$T/out1.img"
stop_server src
assert_same_file "$T/src.img" "$T/out1.img" "--no-extents copy"
n=$(log_count "$T/requests1.txt" Extents)
[[ $n -eq 0 ]] || fail "$n Extents requests sent with --no-extents"
read_bytes=$(log_sum "$T/requests1.txt" Read)
((read_bytes >= size)) || fail "with --no-extents only $read_bytes of $size bytes were read"

msg "default (extents on)"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/requests2.txt"
run_copy "$(uri_for src)" "$T/out2.img"
stop_server src
assert_same_file "$T/src.img" "$T/out2.img" "default copy"
n=$(log_count "$T/requests2.txt" Extents)
((n > 0)) || fail "no Extents requests by default"
msg PASS
