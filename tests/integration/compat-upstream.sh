#!/usr/bin/env bash
# What programs read from libnbd's nbdcopy, read from ours: each -v line
# libnbd prints (its own, not libnbd's debug) starts one of our lines, byte
# for byte, in the same order; every option its --help names is in ours;
# --version has its two-line shape; the same exit status and, where a
# script could match it, the same message. Needs /usr/bin/nbdcopy (the
# reference), skips without it.
source "$(dirname "$0")/lib/lib.sh"
reference=/usr/bin/nbdcopy
[[ -x $reference ]] || skip "no reference $reference (Debian's libnbd-bin)"

make_test_file "$T/src.img" $((3 * MiB + 512))
start_nbdkit src -r file "$T/src.img"
start_nbdkit dst memory size=$((4 * MiB))
start_nbdkit small memory size=$((1 * MiB))

# verbose_lines COPIER ARGS...: the copier's own -v lines.
verbose_lines() {
    local copier=$1
    shift
    "$copier" -v "$@" 2>&1 >/dev/null </dev/null | grep '^nbdcopy: ' || true
}

check_verbose() {
    local what=$1
    shift
    verbose_lines "$reference" "$@" >"$T/ref.txt"
    verbose_lines "$NBDCOPY" "$@" >"$T/ours.txt"
    [[ $(wc -l <"$T/ref.txt") -ge 5 ]] || fail "$what: the reference printed: $(cat "$T/ref.txt")"
    # Each reference line, in order, starts one of our lines.
    python3 - "$T/ref.txt" "$T/ours.txt" <<'PY' || fail "$what: -v lines differ (above)"
import sys
ref = open(sys.argv[1], encoding="utf-8").read().splitlines()
ours = open(sys.argv[2], encoding="utf-8").read().splitlines()
at = 0
for line in ref:
    while at < len(ours) and not ours[at].startswith(line):
        at += 1
    if at == len(ours):
        print("not a prefix of any later line of ours: %r" % line, file=sys.stderr)
        print("ours:\n" + "\n".join(ours), file=sys.stderr)
        sys.exit(1)
    at += 1
PY
    msg "$what: $(wc -l <"$T/ref.txt") -v lines of the reference start ours"
}

rm -f "$T/out.img"
check_verbose "nbd -> file" "$(uri_for src)" "$T/out.img"
check_verbose "file -> nbd" "$T/src.img" "$(uri_for dst)"
check_verbose "file -> null:" "$T/src.img" null:
check_verbose "file -> - (a pipe)" --synchronous "$T/src.img" -
check_verbose "--synchronous nbd -> nbd" --synchronous "$(uri_for src)" "$(uri_for dst)"
check_verbose "-C 1 -R 4 nbd -> null:" -C 1 -R 4 "$(uri_for src)" null:

msg "--help names every option the reference's --help names"
"$reference" --help >"$T/ref-help.txt"
"$NBDCOPY" --help >"$T/help.txt"
options=$(grep -oE -- '--[a-z][a-z-]*' "$T/ref-help.txt" | sort -u)
[[ $(wc -l <<<"$options") -ge 15 ]] || fail "read only $(wc -l <<<"$options") options from the reference"
for option in $options; do
    grep -qE -- "$option([^a-z-]|\$)" "$T/help.txt" || fail "--help does not name $option"
done

msg "--version: 'nbdcopy X.Y.Z' then 'libnbd X.Y.Z', as the reference"
for copier in "$reference" "$NBDCOPY"; do
    "$copier" --version >"$T/version.txt"
    [[ $(wc -l <"$T/version.txt") -eq 2 ]] || fail "$copier --version: $(cat "$T/version.txt")"
    grep -qE '^nbdcopy [0-9]+\.[0-9]+\.[0-9]+$' <(head -n 1 "$T/version.txt") ||
        fail "$copier --version line 1: $(head -n 1 "$T/version.txt")"
    [[ $(sed -n 2p "$T/version.txt") == "$(sed -n 2p <("$reference" --version))" ]] ||
        fail "$copier --version line 2 differs from the reference's"
done

# same_failure WHAT ARGS...: both exit 1; with the same message when the
# reference's message is our one-line form.
same_failure() {
    local what=$1 rc_ref=0 rc_ours=0
    shift
    "$reference" "$@" >/dev/null 2>"$T/ref-err.txt" </dev/null || rc_ref=$?
    "$NBDCOPY" "$@" >/dev/null 2>"$T/err.txt" </dev/null || rc_ours=$?
    [[ $rc_ref -eq 1 && $rc_ours -eq 1 ]] ||
        fail "$what: exit status $rc_ours, the reference's $rc_ref"
    [[ $(wc -l <"$T/err.txt") -eq 1 && $(cat "$T/err.txt") == "nbdcopy: "* ]] ||
        fail "$what: not one 'nbdcopy: ' line: $(cat "$T/err.txt")"
    msg "$what: exit 1 both; ours: $(cat "$T/err.txt")"
}
same_failure "a missing source" "$T/missing.img" "$T/out.img"
[[ $(cat "$T/err.txt") == "$(cat "$T/ref-err.txt")" ]] ||
    fail "a missing source: '$(cat "$T/err.txt")', the reference: '$(cat "$T/ref-err.txt")'"
same_failure "an unknown option" --bogus "$T/src.img" "$T/out.img"
ERR=$(cat "$T/err.txt")
assert_err_contains "--bogus: unknown option"
same_failure "one operand" "$T/src.img"
ERR=$(cat "$T/err.txt")
assert_err_contains "expected SOURCE and DESTINATION, got 1 operand"
same_failure "a bad number" -C x "$T/src.img" "$T/out.img"
ERR=$(cat "$T/err.txt")
assert_err_contains "--connections: not a number: 'x'"
same_failure "a destination too small" "$T/src.img" "$(uri_for small)"
# Scripts match the reference's words; ours adds the sizes after them.
[[ $(cat "$T/err.txt") == "$(cat "$T/ref-err.txt")"* ]] ||
    fail "a destination too small: '$(cat "$T/err.txt")' does not start with the reference's '$(cat "$T/ref-err.txt")'"
msg PASS
