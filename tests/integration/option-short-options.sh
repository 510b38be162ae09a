#!/usr/bin/env bash
# --short-options prints exactly -C -p -R -S -T -v -V, one per line, exit 0.
source "$(dirname "$0")/lib/lib.sh"

printf '%s\n' -C -p -R -S -T -v -V >"$T/want.txt"
"$NBDCOPY" --short-options >"$T/got.txt" 2>"$T/err.txt" || fail "--short-options exited non-zero"
[[ ! -s $T/err.txt ]] || fail "--short-options wrote to stderr: $(cat "$T/err.txt")"
diff -u "$T/want.txt" "$T/got.txt" || fail "--short-options output differs (see diff)"
msg PASS
