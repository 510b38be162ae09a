#!/usr/bin/env bash
# -V / --version: exactly two lines, "nbdcopy X.Y.Z" and
# "libnbd <pkg-config --modversion libnbd>", exit 0, nothing on stderr.
source "$(dirname "$0")/lib/lib.sh"

want_libnbd=
if command -v pkg-config >/dev/null && pkg-config --exists libnbd; then
    want_libnbd="libnbd $(pkg-config --modversion libnbd)"
fi

for opt in -V --version; do
    "$NBDCOPY" "$opt" >"$T/out.txt" 2>"$T/err.txt" || fail "$opt exited non-zero"
    [[ ! -s $T/err.txt ]] || fail "$opt wrote to stderr: $(cat "$T/err.txt")"
    [[ $(wc -l <"$T/out.txt") -eq 2 ]] ||
        fail "$opt: expected 2 lines, got: $(cat "$T/out.txt")"
    line1=$(sed -n 1p "$T/out.txt"); line2=$(sed -n 2p "$T/out.txt")
    [[ $line1 =~ ^nbdcopy\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$opt line 1: '$line1'"
    if [[ -n $want_libnbd ]]; then
        [[ $line2 == "$want_libnbd" ]] || fail "$opt line 2: '$line2', expected '$want_libnbd'"
    else
        [[ $line2 =~ ^libnbd\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$opt line 2: '$line2'"
    fi
    msg "$opt: $line1 / $line2"
done
msg PASS
