#!/usr/bin/env bash
# Long options may be abbreviated as libnbd's nbdcopy (getopt_long) takes
# them: real copies from an nbdkit source with abbreviated options, with
# "=VALUE" and separate values, "--progress[=FD]" included, give the source's
# bytes (cmp); "--" still ends the options; an ambiguous prefix is refused,
# naming every candidate in glibc's words, and nothing is written. Where
# /usr/bin/nbdcopy (1.14.2) is installed, both binaries agree on every
# prefix of its long names: the same exit status, and the same reading
# (accepted, ambiguous, unknown; the full name when a value is missing),
# ours naming at least its candidates.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

make_test_file "$T/src.img" $((3 * MiB))
start_nbdkit src -r file "$T/src.img"
SRC=$(uri_for src)

copy_with() { # WHAT OPTIONS...: a copy to a file with these options
    local what=$1; shift
    rm -f "$T/out.img"
    run_copy "$@" "$SRC" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "$what"
}
copy_with "--sync --flu" --sync --flu
copy_with "--synch --no-ex --all" --synch --no-ex --all
copy_with "--conn=2 --thr=2 --que=16M" --conn=2 --thr=2 --que=16M
copy_with "--conn 2 --thr 2 --que 16M --sp 0" --conn 2 --thr 2 --que 16M --sp 0
copy_with "--c=1 --request-s=65536 --requests=8" --c=1 --request-s=65536 --requests=8
copy_with "--pro --progres" --pro --progres

# --pro=FD: the "N/100" lines on that descriptor, ending 100/100.
rm -f "$T/out.img"
msg "run: nbdcopy --pro=3 SRC out.img 3>progress.txt"
"$NBDCOPY" --pro=3 "$SRC" "$T/out.img" 3>"$T/progress.txt" 2>"$T/cmd.err" ||
    fail "--pro=3 failed: $(cat "$T/cmd.err")"
assert_same_file "$T/src.img" "$T/out.img" "--pro=3"
[[ $(tail -n 1 "$T/progress.txt") == 100/100 ]] ||
    fail "--pro=3: last progress line '$(tail -n 1 "$T/progress.txt")', expected 100/100"

# --dest / --target to a destination that reads as zeroes.
for word in --dest --target --d; do
    start_nbdkit dst memory size=3M
    run_copy "$word" "$SRC" "$(uri_for dst)"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "$word"
    stop_server dst
done

# After "--" a word is an operand, abbreviation or not: a file named "--fl".
(cd "$T" && "$NBDCOPY" --sync -- src.img --fl) 2>"$T/cmd.err" ||
    fail "--sync -- src.img --fl failed: $(cat "$T/cmd.err")"
assert_same_file "$T/src.img" "$T/--fl" "the operand '--fl' after '--'"

# Ambiguous prefixes: refused before anything is written.
rm -f "$T/out.img"
expect_fail "$NBDCOPY" --re=8 "$SRC" "$T/out.img"
[[ $ERR == "nbdcopy: option '--re=8' is ambiguous; possibilities: '--request-size' '--requests' '--retry'" ]] ||
    fail "--re=8: $ERR"
[[ ! -e $T/out.img ]] || fail "destination created despite an ambiguous option"
expect_fail "$NBDCOPY" "$SRC" "$T/out.img" --ve
[[ $ERR == "nbdcopy: option '--ve' is ambiguous; possibilities: '--verbose' '--verify' '--version'" ]] ||
    fail "--ve: $ERR"
expect_fail "$NBDCOPY" --blkh "$SRC" null:
assert_err_contains "option '--blkh' is ambiguous; possibilities: '--blkhash' '--blkhash-file'"

REFERENCE=/usr/bin/nbdcopy
if [[ ! -x $REFERENCE ]]; then
    msg "no $REFERENCE: the comparison is left out"
    msg PASS
    exit 0
fi

# The real copies above, with the reference too (1.14.2 takes plain numbers).
for words in "--sync --flu" "--conn=2 --thr=2 --que=16777216" "--sp 0 --pro" "--all --no-ex"; do
    rm -f "$T/ref.img"
    # shellcheck disable=SC2086 # the words are split on purpose
    "$REFERENCE" $words "$SRC" "$T/ref.img" 2>"$T/ref-err.txt" ||
        fail "the reference refused $words: $(cat "$T/ref-err.txt")"
    assert_same_file "$T/src.img" "$T/ref.img" "the reference with $words"
done

# How a binary read a lone word: READING gets its exit status and reading,
# FIRST the first line of its stderr and ERRTEXT all of it. (It sets
# variables instead of printing: a $(...) per word and binary would fork a
# subshell, and the stderr read here serves the candidate checks too.)
reading() { # BINARY WORD
    local rc=0
    "$1" "$2" </dev/null >/dev/null 2>"$T/reading.err" || rc=$?
    IFS= read -r -d "" ERRTEXT <"$T/reading.err" || true
    ERRTEXT=${ERRTEXT%$'\n'}
    FIRST=${ERRTEXT%%$'\n'*}
    if [[ $FIRST == *" is ambiguous; possibilities:"* ]]; then
        READING="$rc ambiguous"
    elif [[ $FIRST == *"unrecognized option"* || $FIRST == *": unknown option" ]]; then
        READING="$rc unknown"
    elif [[ $FIRST =~ (--[a-z-]+)\'?:?\ requires\ (an\ argument|a\ value) ]]; then
        READING="$rc value for ${BASH_REMATCH[1]}"
    else
        READING="$rc accepted"
    fi
}

# Every prefix of every long name of the reference, and a few non-names.
mapfile -t names < <("$REFERENCE" --long-options; echo --long-options; echo --short-options)
words=(--bogus --flushx --synchronously --x)
for name in "${names[@]}"; do
    for ((length = 3; length <= ${#name}; length++)); do words+=("${name:0:length}"); done
done
checked=0
for word in $(printf '%s\n' "${words[@]}" | sort -u); do
    reading "$REFERENCE" "$word"
    ref=$READING ref_first=$FIRST
    reading "$NBDCOPY" "$word"
    ours=$READING
    [[ $ref == "$ours" ]] || fail "$word: the reference: '$ref', ours: '$ours'"
    if [[ $ours == *ambiguous ]]; then
        line=$ERRTEXT
        [[ $line == "nbdcopy: option '$word' is ambiguous; possibilities: '--"* ]] ||
            fail "$word: not glibc's words: $line"
        # The reference's candidates: the rest of its ambiguity line.
        candidates=${ref_first#*possibilities: }
        [[ -n $candidates && $candidates != "$ref_first" ]] ||
            fail "$word: the reference names no candidates"
        for candidate in $candidates; do
            [[ $line == *" $candidate"* ]] || fail "$word: ours does not name $candidate: $line"
        done
    fi
    checked=$((checked + 1))
done
msg "$checked words read alike by both binaries"
msg PASS
