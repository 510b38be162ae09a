#!/usr/bin/env bash
# NBD to null: succeeds, and really reads the whole source (the nbdkit log
# filter on the source must show reads covering every byte of an export that
# is all data).
source "$(dirname "$0")/lib/lib.sh"

size=$((7 * MiB + 4096))
start_nbdkit src --filter=log -r pattern size="$size" logfile="$T/src-requests.txt"

msg "pattern export -> null:"
run_copy "$(uri_for src)" null:
stop_server src
read_bytes=$(log_sum "$T/src-requests.txt" Read)
msg "source bytes read: $read_bytes of $size"
((read_bytes >= size)) || fail "only $read_bytes of $size bytes were read from the source"

msg "sparse-random export (holes and data) -> null:"
start_nbdkit sparse sparse-random size=$((64 * MiB)) percent=10 seed=99
run_copy "$(uri_for sparse)" null:

msg "file -> null:"
make_test_file "$T/src.img" $((3 * MiB))
run_copy "$T/src.img" null:
msg PASS
