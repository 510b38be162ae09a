#!/usr/bin/env bash
# NBD to null: succeeds, and reads exactly what a copy must read: from an
# export that is all data, every byte once and nothing beyond its end (the
# nbdkit log filter on the source shows the reads); from a file with holes,
# every byte of data and none of the large holes (which are zero extents);
# and the --json report says it read what the server saw.
source "$(dirname "$0")/lib/lib.sh"

size=$((7 * MiB + 4096))
start_nbdkit src --filter=log -r pattern size="$size" logfile="$T/src-requests.txt"

msg "pattern export -> null:"
run_copy --json="$T/r1.json" "$(uri_for src)" null:
stop_server src
log=$T/src-requests.txt
read_bytes=$(log_sum "$log" Read)
msg "source bytes read: $read_bytes of $size"
[[ $(logtool span "$log" Read "$size") -eq 0 ]] ||
    fail "$(logtool span "$log" Read "$size") bytes of the source were never read"
[[ $(logtool overlap "$log" Read) -eq 0 ]] || fail "$(logtool overlap "$log" Read) bytes were read twice"
[[ $(logtool outside "$log" Read "$size") -eq 0 ]] || fail "reads beyond the end of the source"
[[ $read_bytes -eq $size ]] || fail "read $read_bytes bytes of a $size-byte source"
json_read=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_read"])' "$T/r1.json")
[[ $json_read -eq $size ]] || fail "--json says bytes_read=$json_read, the server saw $size"

msg "file with large holes -> null:"
truncate -s $((48 * MiB)) "$T/holes.img"
for at in 0 5 17 30; do write_random "$T/holes.img" $((at * MiB)) $((MiB + 4096)); done
write_random "$T/holes.img" $((48 * MiB - 1234)) 1234
start_nbdkit holes --filter=log -r file "$T/holes.img" logfile="$T/holes-requests.txt"
run_copy "$(uri_for holes)" null:
stop_server holes
log=$T/holes-requests.txt
[[ $(logtool uncovered "$log" Read "$T/holes.img") -eq 0 ]] ||
    fail "$(logtool uncovered "$log" Read "$T/holes.img") bytes of data were never read"
[[ $(logtool holebytes "$log" Read "$T/holes.img" 65536) -eq 0 ]] ||
    fail "$(logtool holebytes "$log" Read "$T/holes.img" 65536) bytes were read inside whole 64 KiB blocks of holes"
[[ $(logtool overlap "$log" Read) -eq 0 ]] || fail "$(logtool overlap "$log" Read) bytes were read twice"

msg "file -> null:"
make_test_file "$T/src.img" $((3 * MiB))
run_copy "$T/src.img" null:
msg PASS
