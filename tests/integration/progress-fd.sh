#!/usr/bin/env bash
# --progress=FD: FD receives lines "N/100", all well formed, monotonic
# non-decreasing, the last exactly "100/100"; nothing of it goes to stderr
# or stdout; the copy is correct.  Tried with the default and the
# synchronous copier, to a file and to a pipe read concurrently.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"

size=$((6 * MiB + 1234))
make_test_file "$T/src.img" "$size"

check_progress() { # FILE WHAT
    [[ -s $1 ]] || fail "$2: no progress output"
    local line prev=-1 n last
    while IFS= read -r line; do
        [[ $line =~ ^([0-9]+)/100$ ]] || fail "$2: malformed progress line '$line'"
        n=${BASH_REMATCH[1]}
        ((n <= 100)) || fail "$2: progress $n/100 above 100"
        ((n >= prev)) || fail "$2: progress went backwards ($prev then $n)"
        prev=$n
    done <"$1"
    last=$(tail -n 1 "$1")
    [[ $last == 100/100 ]] || fail "$2: last line '$last', expected 100/100"
    [[ $(tail -c 1 "$1" | od -An -c | tr -d ' ') == '\n' ]] ||
        fail "$2: last line not terminated by a newline"
    msg "$2: $(wc -l <"$1") progress lines"
}

for mode in default --synchronous; do
    opt=(); [[ $mode == default ]] || opt=("$mode")
    msg "--progress=3 ($mode) file -> file"
    rm -f "$T/out.img"
    "$NBDCOPY" "${opt[@]}" --progress=3 "$T/src.img" "$T/out.img" \
        3>"$T/progress.txt" 2>"$T/err.txt" >"$T/stdout.txt" ||
        fail "copy failed: $(head -c 300 "$T/err.txt")"
    assert_same_file "$T/src.img" "$T/out.img" "--progress=3 $mode"
    check_progress "$T/progress.txt" "--progress=3 $mode"
    ! grep -q '/100' "$T/err.txt" "$T/stdout.txt" ||
        fail "progress lines leaked to stderr/stdout"
done

msg "--progress=5 nbd -> file, progress read through a pipe"
start_nbdkit src -r file "$T/src.img"
rm -f "$T/out.img"
{ "$NBDCOPY" --progress=5 "$(uri_for src)" "$T/out.img" 5>&1 >/dev/null 2>"$T/err.txt" ||
      echo "COPY FAILED"; } | cat >"$T/progress2.txt"
! grep -q 'COPY FAILED' "$T/progress2.txt" || fail "copy failed: $(head -c 300 "$T/err.txt")"
assert_same_file "$T/src.img" "$T/out.img" "--progress=5 to a pipe"
check_progress "$T/progress2.txt" "--progress=5 to a pipe"
msg PASS
