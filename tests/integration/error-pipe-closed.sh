#!/usr/bin/env bash
# Writing to a pipe whose reader has gone (nbdcopy SRC - | head -c 1): the
# copy ends promptly (a watchdog bounds it) with exit status 1 and one line
# naming the broken pipe, never killed silently by SIGPIPE and never hung;
# a "[ CMD ]" source server is reaped.
source "$(dirname "$0")/lib/lib.sh"
require_cmd timeout head

size=$((32 * MiB))
make_random_file "$T/src.img" "$size"

check() { # WHAT STATUSES...
    local what=$1 copy_rc=$2 head_rc=$3  # timeout's status: 124 if it fired
    sed 's/^/    stderr: /' "$T/err.txt" >&2
    [[ $copy_rc -ne 124 ]] || fail "$what: hung (watchdog fired)"
    [[ $copy_rc -eq 1 ]] || fail "$what: exit status $copy_rc, expected 1"
    [[ $head_rc -eq 0 ]] || fail "$what: head failed"
    [[ $(wc -l <"$T/err.txt") -eq 1 ]] || fail "$what: expected one line on stderr"
    grep -qE '^nbdcopy: -: write .*: Broken pipe$' "$T/err.txt" ||
        fail "$what: unexpected message: $(cat "$T/err.txt")"
    [[ $(stat -c %s "$T/first.txt") -eq 1 ]] || fail "$what: head did not get its byte"
}

for mode in default --synchronous; do
    opt=(); [[ $mode == default ]] || opt=("$mode")
    msg "file -> stdout | head -c 1 ($mode)"
    set +o pipefail
    timeout 60 "$NBDCOPY" "${opt[@]}" "$T/src.img" - 2>"$T/err.txt" | head -c 1 >"$T/first.txt"
    statuses=("${PIPESTATUS[@]}")
    set -o pipefail
    check "file ($mode)" "${statuses[@]}"
done

msg "[ nbdkit ] -> stdout | head -c 1, with -p"
rm -f "$T/child.pid"
set +o pipefail
timeout 60 "$NBDCOPY" -p -- [ nbdkit --log=null -P "$T/child.pid" pattern 1G ] - \
    2>"$T/err-p.txt" | head -c 1 >"$T/first.txt"
statuses=("${PIPESTATUS[@]}")
set -o pipefail
grep -v '% \[[*-]*\]' "$T/err-p.txt" >"$T/err.txt" || true  # progress lines aside
check "[ nbdkit ] source" "${statuses[0]}" "${statuses[1]}"
! _alive "$(cat "$T/child.pid")" || fail "the [ nbdkit ] server outlived nbdcopy"
msg PASS
