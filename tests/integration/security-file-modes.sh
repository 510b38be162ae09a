#!/usr/bin/env bash
# Files nbdcopy creates (a destination, --blkhash-file) get their mode from
# the umask and are never writable by others: umask 022 -> 644, 077 -> 600,
# 002 -> 664, and 000 -> 664 (not 666). An existing destination keeps its
# mode.
source "$(dirname "$0")/lib/lib.sh"

make_test_file "$T/src.img" $((MiB + 99))

for case in 022:644 077:600 002:664 000:664; do
    mask=${case%:*} want=${case#*:}
    rm -f "$T/out.img" "$T/sum"
    (umask "$mask" && "$NBDCOPY" --blkhash --blkhash-file="$T/sum" "$T/src.img" "$T/out.img") ||
        fail "copy with umask $mask failed"
    assert_same_file "$T/src.img" "$T/out.img" "umask $mask"
    for file in "$T/out.img" "$T/sum"; do
        mode=$(stat -c %a "$file")
        [[ $mode == "$want" ]] || fail "umask $mask: $(basename "$file") has mode $mode, expected $want"
    done
    msg "umask $mask: destination and digest file $want"
done

rm -f "$T/out.img"
touch "$T/out.img"
chmod 640 "$T/out.img"
(umask 000 && "$NBDCOPY" "$T/src.img" "$T/out.img") || fail "copy onto an existing file failed"
[[ $(stat -c %a "$T/out.img") == 640 ]] || fail "an existing destination's mode changed"
assert_same_file "$T/src.img" "$T/out.img" "existing destination"
msg PASS
