#!/usr/bin/env bash
# -p / --progress: something is drawn on stderr, nothing extra on stdout,
# and the copy is still correct (file -> nbd, and nbd -> stdout where the
# bar must not pollute the data).
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit dst memory size="$size"

for opt in -p --progress; do
    msg "$opt file -> nbd"
    "$NBDCOPY" "$opt" "$T/src.img" "$(uri_for dst)" 2>"$T/err.txt" ||
        fail "$opt copy failed: $(head -c 300 "$T/err.txt")"
    [[ -s $T/err.txt ]] || fail "$opt printed nothing on stderr"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "$opt copy"

    msg "$opt nbd -> stdout"
    "$NBDCOPY" "$opt" "$(uri_for dst)" - 2>"$T/err2.txt" >"$T/out.img" ||
        fail "$opt copy to stdout failed: $(head -c 300 "$T/err2.txt")"
    [[ -s $T/err2.txt ]] || fail "$opt printed nothing on stderr"
    assert_same_file "$T/src.img" "$T/out.img" "$opt copy to stdout"
done
msg PASS
