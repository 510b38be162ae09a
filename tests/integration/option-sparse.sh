#!/usr/bin/env bash
# Zero detection in read data (-S / --sparse), isolated with --no-extents on
# a source full of allocated zeroes: by default the zero blocks go to the
# destination as Zero requests (not Writes); with --sparse=0 everything is
# written as data.  The destination (pre-filled with random bytes) is
# identical to the source every time.
source "$(dirname "$0")/lib/lib.sh"

size=$((4 * MiB))
make_random_file "$T/src.img" "$size"
write_zeroes "$T/src.img" "$MiB" $((2 * MiB))   # 2 MiB of allocated zeroes

copy() { # LOGNAME NBDCOPY-OPTIONS...
    local name=$1; shift
    make_random_file "$T/dst.img" "$size"
    start_nbdkit dst --filter=log file "$T/dst.img" logfile="$T/$name.txt"
    run_copy --no-extents "$@" "$T/src.img" "$(uri_for dst)"
    stop_server dst
    assert_same_file "$T/src.img" "$T/dst.img" "copy with --no-extents $*"
}

msg "default zero detection"
copy detect
written=$(log_sum "$T/detect.txt" Write)
zeroed=$(( $(log_sum "$T/detect.txt" Zero) + $(log_sum "$T/detect.txt" Trim) ))
msg "written $written, zeroed/trimmed $zeroed"
((zeroed >= 2 * MiB)) || fail "zero blocks in the data were not sent as Zero/Trim"
((written <= size - 2 * MiB)) || fail "zero blocks were written as data"

msg "-S 65536"
copy detect64k -S 65536
zeroed=$(( $(log_sum "$T/detect64k.txt" Zero) + $(log_sum "$T/detect64k.txt" Trim) ))
((zeroed >= 2 * MiB)) || fail "-S 65536: zero blocks were not sent as Zero/Trim"

msg "--sparse=0 disables zero detection"
copy nodetect --sparse=0
written=$(log_sum "$T/nodetect.txt" Write)
n=$(( $(log_count "$T/nodetect.txt" Zero) + $(log_count "$T/nodetect.txt" Trim) ))
msg "written $written, $n zero/trim requests"
[[ $n -eq 0 ]] || fail "--sparse=0: $n Zero/Trim requests"
((written >= size)) || fail "--sparse=0: only $written bytes written"
msg PASS
