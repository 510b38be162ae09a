#!/usr/bin/env bash
# -p when stderr is not a terminal (a log file): no carriage-return redraws,
# one frame a line, libnbd's frame then ours: "S PPP% [****----] X of Y[,
# RATE][, ETA t]" with P going up, and a final line "█ 100% [****] ... in
# m:ss"; the copy is correct.
source "$(dirname "$0")/lib/lib.sh"

size=$((64 * MiB))
make_test_file "$T/src.img" "$size"
start_nbdkit src -r --filter=delay file "$T/src.img" delay-read=5ms

for mode in default --synchronous; do
    opt=(); [[ $mode == default ]] || opt=("$mode")
    msg "-p $mode, stderr to a file"
    rm -f "$T/out.img"
    "$NBDCOPY" "${opt[@]}" -p "$(uri_for src)" "$T/out.img" 2>"$T/err.txt" ||
        fail "copy failed: $(head -c 300 "$T/err.txt")"
    sed 's/^/    /' "$T/err.txt" >&2
    assert_same_file "$T/src.img" "$T/out.img" "-p $mode"
    ! grep -q $'\r' "$T/err.txt" || fail "carriage returns in a log file"
    prev=-1
    while IFS= read -r line; do
        [[ $line =~ ^.\ +([0-9]+)%\ \[[*-]{40}\]\ [0-9.]+\ [KMG]?i?B\ of\ 64\.0\ MiB,\ ([0-9.]+\ [KMG]?i?B|--)/s(,\ (ETA|in)\ [0-9:]+)?$ ]] ||
            fail "malformed line '$line'"
        ((BASH_REMATCH[1] >= prev)) || fail "percent went backwards: $prev then ${BASH_REMATCH[1]}"
        prev=${BASH_REMATCH[1]}
    done <"$T/err.txt"
    [[ $(tail -n 1 "$T/err.txt") =~ ^█\ 100%\ \[\*{40}\]\ 64\.0\ MiB\ of\ 64\.0\ MiB,\ .*,\ in\ [0-9]+:[0-9]{2}$ ]] ||
        fail "no final line: '$(tail -n 1 "$T/err.txt")'"
    [[ $(grep -c ' 100% ' "$T/err.txt") -eq 1 ]] || fail "100% reported more than once"
done
msg PASS
