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
    local what=$1 ref ours line at=0
    shift
    verbose_lines "$reference" "$@" >"$T/ref.txt"
    verbose_lines "$NBDCOPY" "$@" >"$T/ours.txt"
    mapfile -t ref <"$T/ref.txt"
    mapfile -t ours <"$T/ours.txt"
    ((${#ref[@]} >= 5)) || fail "$what: the reference printed: $(<"$T/ref.txt")"
    # Each reference line, in order, starts one of our lines (a dozen
    # lines each: compared in bash).
    for line in "${ref[@]}"; do
        while ((at < ${#ours[@]})) && [[ ${ours[at]} != "$line"* ]]; do
            at=$((at + 1))
        done
        ((at < ${#ours[@]})) ||
            fail "$what: -v lines differ: not a prefix of any later line of ours: '$line'; ours:
$(<"$T/ours.txt")"
        at=$((at + 1))
    done
    msg "$what: ${#ref[@]} -v lines of the reference start ours"
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
mapfile -t options < <(grep -oE -- '--[a-z][a-z-]*' "$T/ref-help.txt" | sort -u)
((${#options[@]} >= 15)) || fail "read only ${#options[@]} options from the reference"
# Each option followed by a character that cannot continue it, or by the
# end of a line (grep -E "$option([^a-z-]|$)" on each line of ours).
help=$(<"$T/help.txt")$'\n'
for option in "${options[@]}"; do
    [[ $help =~ $option([^a-z-]) ]] || fail "--help does not name $option"
done

msg "--version: 'nbdcopy X.Y.Z' then 'libnbd X.Y.Z', as the reference"
"$reference" --version >"$T/ref-version.txt"
mapfile -t ref_version <"$T/ref-version.txt"
for copier in "$reference" "$NBDCOPY"; do
    "$copier" --version >"$T/version.txt"
    mapfile -t version <"$T/version.txt"
    text=''
    IFS= read -r -d '' text <"$T/version.txt" || true
    newlines=${text//[!$'\n']/}  # (wc -l)
    [[ ${#newlines} -eq 2 ]] || fail "$copier --version: $text"
    [[ ${version[0]} =~ ^nbdcopy\ [0-9]+\.[0-9]+\.[0-9]+$ ]] ||
        fail "$copier --version line 1: ${version[0]}"
    [[ ${version[1]} == "${ref_version[1]}" ]] ||
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
    local text=''
    IFS= read -r -d '' text <"$T/err.txt" || true
    ERR=$(<"$T/err.txt") REF_ERR=$(<"$T/ref-err.txt")
    # One line (one newline, wc -l), starting "nbdcopy: ".
    [[ $text == "$ERR"$'\n' && $ERR != *$'\n'* && $ERR == "nbdcopy: "* ]] ||
        fail "$what: not one 'nbdcopy: ' line: $ERR"
    msg "$what: exit 1 both; ours: $ERR"
}
# (It leaves our message in ERR and the reference's in REF_ERR.)
same_failure "a missing source" "$T/missing.img" "$T/out.img"
[[ $ERR == "$REF_ERR" ]] ||
    fail "a missing source: '$ERR', the reference: '$REF_ERR'"
same_failure "an unknown option" --bogus "$T/src.img" "$T/out.img"
assert_err_contains "--bogus: unknown option"
same_failure "one operand" "$T/src.img"
assert_err_contains "expected SOURCE and DESTINATION, got 1 operand"
same_failure "a bad number" -C x "$T/src.img" "$T/out.img"
assert_err_contains "--connections: not a number: 'x'"
same_failure "a destination too small" "$T/src.img" "$(uri_for small)"
# Scripts match the reference's words; ours adds the sizes after them.
# libnbd 1.14's nbdcopy says "nbdcopy: error: destination size is smaller
# than source size", ours starts with those words. Newer ones (1.22 in
# Debian 13) put the sizes inside: "destination size (D) is smaller than
# source size (S)"; ours keeps 1.14's words (docs/compatibility.md), so
# against those: the same words around the sizes, and the same sizes.
if [[ $REF_ERR =~ ^(nbdcopy: error: destination size)\ \(([0-9]+)\)\ (is smaller than source size)\ \(([0-9]+)\)$ ]]; then
    [[ $ERR == "${BASH_REMATCH[1]} ${BASH_REMATCH[3]} ("*": source ${BASH_REMATCH[4]} bytes, destination ${BASH_REMATCH[2]} bytes)" ]] ||
        fail "a destination too small: '$ERR' lacks the reference's words or sizes: '$REF_ERR'"
else
    [[ $ERR == "$REF_ERR"* ]] ||
        fail "a destination too small: '$ERR' does not start with the reference's '$REF_ERR'"
fi
msg PASS
