#!/usr/bin/env bash
# With --flush, a failing flush on the destination fails the copy with a
# clean one-line error naming the destination, the flush and the I/O error (nbdkit 1.32's error filter
# cannot fail flushes, so the server is an nbdkit eval script over a file
# whose flush method returns EIO).  Without --flush the copy succeeds.
# (nbdcopy 1.14.2 prints this error without the "nbdcopy: " prefix.)
source "$(dirname "$0")/lib/lib.sh"

size=$((2 * MiB))
make_random_file "$T/src.img" "$size"
truncate -s "$size" "$T/dst.img"
d=$T/dst.img
start_nbdkit dst eval \
    get_size="echo $size" \
    pread="dd if='$d' skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
    pwrite="dd of='$d' seek=\$4 oflag=seek_bytes conv=notrunc status=none" \
    flush='echo "EIO injected flush failure" >&2; exit 1' \
    can_multi_conn='exit 0'

msg "--flush with a failing flush"
expect_fail "$NBDCOPY" --flush "$T/src.img" "$(uri_for dst)"
assert_err_matches "^nbdcopy: $(re_quote "$(uri_for dst)"): flush: Input/output error\$"

msg "same server without --flush"
run_copy "$T/src.img" "$(uri_for dst)"
assert_same_file "$T/src.img" "$T/dst.img" "copy without --flush"
msg PASS
