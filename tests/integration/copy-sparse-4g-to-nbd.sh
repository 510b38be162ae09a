#!/usr/bin/env bash
# A 4 GiB sparse file copied to nbdkit memory 4G behind the log filter:
# the holes go over as NBD zero/trim requests, not as writes (total written
# bytes far below 4 GiB), every byte is covered by a write, zero or trim,
# and the export then matches the file (qemu-img compare, which reads the
# data regions and trusts block status for the rest).
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img

size=$((4 * 1024 * MiB))
truncate -s "$size" "$T/src.img"
offsets="0 $((1024 * MiB + 12345)) $((3 * 1024 * MiB)) $((size - MiB))"
for off in $offsets; do
    write_random "$T/src.img" "$off" "$MiB"
done

start_nbdkit mem --filter=log memory size=4G logfile="$T/requests.txt"
run_copy "$T/src.img" "$(uri_for mem)"

qemu-img compare -q -f raw -F raw "$T/src.img" "$(uri_for mem)" ||
    fail "qemu-img compare: export content differs from the file"
stop_server mem

written=$(log_sum "$T/requests.txt" Write)
zeroed=$(log_sum "$T/requests.txt" Zero)
trimmed=$(log_sum "$T/requests.txt" Trim)
msg "written $written, zeroed $zeroed, trimmed $trimmed bytes"
((written >= 4 * MiB)) || fail "only $written bytes written, the data is 4 MiB"
((written < 64 * MiB)) || fail "$written bytes sent as writes: holes shipped as data"
((zeroed + trimmed > 0)) || fail "no Zero or Trim requests for the holes"
# Every byte of the export must have been covered by a write, zero or trim.
((written + zeroed + trimmed >= size)) ||
    fail "writes+zeroes+trims cover only $((written + zeroed + trimmed)) of $size bytes"
msg PASS
