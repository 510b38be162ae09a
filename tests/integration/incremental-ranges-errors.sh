#!/usr/bin/env bash
# --ranges=FILE refusals: each one exits 1 with exactly one line, the
# message's words (which option, which list, which line or element, what
# is wrong with it), and the destination byte-identical to before (cmp with
# a saved copy), or not created.
#  - the list: a range past the end of the source (text and JSON), a
#    negative number, unparseable numbers and lines, 64-bit overflow,
#    invalid JSON, JSON that is not an array of objects, missing or doubled
#    fields, an empty file, only comments and zero lengths, an empty JSON
#    array, "type" rows without --ranges-type, --ranges-type with a text
#    list or matching no row, rows without a "type" under --ranges-type, a
#    control character (shown as "?"); from stdin too ("--ranges=-");
#  - the file: missing (--ranges=/nonexistent), a directory, no name;
#  - options: --blkhash, --destination-is-zero / --target-is-zero,
#    --dirty-bitmap (either order), --ranges-type=abc / -1, and
#    --ranges-type without --ranges (a full copy must not happen by mistake);
#  - operands: destination "-" (nothing on stdout), a FIFO, a character
#    device, missing (not created), smaller than the source; source "-", a
#    FIFO, a character device.
# An NBD destination behind the log filter sees no Write, Zero or Trim
# for a refused list, and --json=FILE records the refusal.  At the end the
# same destination accepts a good list.
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3

# 2 MiB: room for the good list (0 4K, 1M 64K) and the typed rows; the
# destination is compared with its saved copy after each of some 55 runs.
size=$((2 * MiB))
make_random_file "$T/src.raw" "$size"
make_random_file "$T/dst.raw" "$size"
cp "$T/dst.raw" "$T/saved.raw"
printf '0 4K\n1M 64K\n' >"$T/good.txt"

# one_line FILE: FILE holds exactly one newline character (wc -l is 1),
# told without a process (this runs some 55 times).
one_line() {
    local text=''
    IFS= read -r -d '' text <"$1" || true
    text=${text//[!$'\n']/}
    [[ ${#text} -eq 1 ]]
}

# refuse WANT ARGS...: nbdcopy ARGS exits 1 with the one line WANT, and the
# destination is as it was.
refuse() {
    local want=$1; shift
    bounded_copy "$@"
    [[ $RC -eq 1 ]] || fail "exit status $RC, expected 1: nbdcopy $*"
    one_line "$ERR_FILE" || fail "expected one line on stderr, got: $ERR"
    [[ $ERR == "$want" ]] || fail "expected '$want', got '$ERR'"
    assert_unchanged "$T/dst.raw" "$T/saved.raw" "nbdcopy $*"
}
# bad_list WANT-AFTER-PREFIX TEXT [OPTIONS...]: TEXT (printf format) as
# FILE; the message is "nbdcopy: --ranges=FILE: WANT-AFTER-PREFIX".
n=0
bad_list() {
    local want=$1 text=$2 list
    shift 2
    n=$((n + 1))
    list=$T/list$n
    # shellcheck disable=SC2059  # TEXT is a format: \n, \r, \001
    printf -- "$text" >"$list"
    refuse "nbdcopy: --ranges=$list: $want" "$@" --ranges="$list" "$T/src.raw" "$T/dst.raw"
}

msg "ranges past the end of the source"
bad_list "line 3: offset 2096544 + length 1000 = 2097544 is past the end of the image (2097152 bytes)" \
    '0 4K\n# the next one is too long\n2096544 1000\n'
bad_list "line 5: offset 2097152 + length 1 = 2097153 is past the end of the image (2097152 bytes)" \
    '0 1\r\n# c\r\n\r\n1M 3\r\n2M 1\r\n'
bad_list "element [1]: offset 2097144 + length 9 = 2097153 is past the end of the image (2097152 bytes)" \
    '[{"offset": 0, "length": 1}, {"offset": 2097144, "length": 9}]'
bad_list "line 1: offset 18446744073709551615 + length 1 overflows 64 bits" \
    '18446744073709551615 1\n'
# Past the end even when the row is not chosen.
bad_list "element [1]: offset 2097152 + length 65536 = 2162688 is past the end of the image (2097152 bytes)" \
    '[{"offset": 0, "length": 1, "type": 1}, {"offset": 2097152, "length": 65536, "type": 0}]' \
    --ranges-type=1

msg "negative and unparseable numbers, bad lines"
bad_list "line 2: offset: size must not be negative: '-5'" '0 1\n-5 10\n'
bad_list "line 1: length: size must not be negative: '-10'" '0 -10\n'
bad_list "element [0]: \"offset\" must not be negative: -1" '[{"offset": -1, "length": 1}]'
bad_list "element [0]: \"length\" must not be negative: -4096" '[{"offset": 0, "length": -4096}]'
bad_list "line 1: offset: not a size: 'abc'" 'abc 10\n'
bad_list "line 1: length: unknown size suffix 'x' in '10x' (use K, M, G or T)" '10 10x\n'
bad_list "line 1: offset: not a hexadecimal number: '0xZZ'" '0xZZ 1\n'
bad_list "line 1: offset: size too large: '99999999999999999999'" '99999999999999999999 1\n'
bad_list "line 2: expected \"OFFSET LENGTH\" (two sizes), not '1 2 3'" '0 1\n1 2 3\n'
bad_list "line 1: expected \"OFFSET LENGTH\" (two sizes), not '4096'" '4096\n'
bad_list "line 1: offset: not a size: 'ab?c'" 'ab\001c 1\n'
bad_list "element [0]: \"offset\" must be a JSON integer from 0 to 18446744073709551615, not the number 1.5" \
    '[{"offset": 1.5, "length": 1}]'
bad_list "element [0]: \"length\" must be a JSON integer from 0 to 18446744073709551615, not a string" \
    '[{"offset": 0, "length": "4096"}]'
bad_list "invalid JSON: parse error at line 1, column 15: syntax error while parsing object key - unexpected end of input; expected string literal" \
    '[{"offset": 1,'
bad_list "not a JSON array of objects (the top level is an object)" '{"offset": 0, "length": 1}'
bad_list "element [1]: not an object but a number" '[{"offset": 0, "length": 1}, 7]'
bad_list "element [0]: no \"offset\" (or \"start\")" '[{"length": 1}]'
bad_list "element [0]: no \"length\"" '[{"start": 1}]'
bad_list "element [0]: has both \"offset\" and \"start\" (give one)" '[{"offset": 1, "start": 1, "length": 1}]'

msg "lists naming nothing"
bad_list "the list names no ranges to copy (no lines, or only comments and zero lengths)" ''
bad_list "the list names no ranges to copy (no lines, or only comments and zero lengths)" \
    '# nothing changed\n\n   \n1M 0\n'
bad_list "the list names no ranges to copy (an empty array or only zero lengths)" '[]'
bad_list "the list names no ranges to copy (an empty array or only zero lengths)" \
    ' [ {"offset": 4096, "length": 0} ]\n'

msg "types"
typed='[{"offset": 0, "length": 1048576, "type": 0, "description": "clean"},
{"offset": 1048576, "length": 1048576, "type": 1, "description": "dirty"}]'
bad_list "the rows have a \"type\", as an nbdinfo --map lists every kind of range of the image; choose the rows to copy with --ranges-type=N" \
    "$typed"
bad_list "--ranges-type=1 selects rows of a JSON list by their \"type\", but this list is text" \
    '0 4K\n' --ranges-type=1
bad_list "no row has \"type\" 2: the list names no ranges to copy" "$typed" --ranges-type=2
bad_list "element [1]: no \"type\" to match --ranges-type=1 against" \
    '[{"offset": 0, "length": 1, "type": 1}, {"offset": 1, "length": 1}]' --ranges-type=1
bad_list "element [0]: \"type\" must be a JSON integer, not a string" \
    '[{"offset": 0, "length": 1, "type": "dirty"}]' --ranges-type=1

msg "from stdin"
printf '0 4K\n2M 4K\n' >"$T/past.txt"
refuse "nbdcopy: --ranges=-: line 2: offset 2097152 + length 4096 = 2101248 is past the end of the image (2097152 bytes)" \
    --ranges=- "$T/src.raw" "$T/dst.raw" <"$T/past.txt"
refuse "nbdcopy: --ranges=-: the list names no ranges to copy (no lines, or only comments and zero lengths)" \
    --ranges=- "$T/src.raw" "$T/dst.raw" </dev/null

msg "the file"
refuse "nbdcopy: --ranges=/nonexistent: No such file or directory" \
    --ranges=/nonexistent "$T/src.raw" "$T/dst.raw"
mkdir "$T/dir"
refuse "nbdcopy: --ranges=$T/dir: Is a directory" --ranges="$T/dir" "$T/src.raw" "$T/dst.raw"
expect_usage_error "$NBDCOPY" --ranges= "$T/src.raw" "$T/dst.raw"
assert_err_contains "--ranges"
assert_unchanged "$T/dst.raw" "$T/saved.raw" "--ranges="

msg "options"
refuse "nbdcopy: --blkhash: cannot be used with --ranges (the digest covers the whole source, an incremental copy reads only the listed ranges; use --verify to check the result)" \
    --blkhash --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"
for zero in --destination-is-zero --target-is-zero; do
    refuse "nbdcopy: --destination-is-zero: cannot be used with --ranges (the destination holds the previous copy, and zeroes inside listed ranges must be written)" \
        "$zero" --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"
done
refuse "nbdcopy: --ranges: cannot be used with --dirty-bitmap (choose one list of changes)" \
    --ranges="$T/good.txt" --dirty-bitmap=b0 "$T/src.raw" "$T/dst.raw"
refuse "nbdcopy: --ranges: cannot be used with --dirty-bitmap (choose one list of changes)" \
    --dirty-bitmap=b0 --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"
refuse "nbdcopy: --ranges-type: not a number: 'abc'" \
    --ranges-type=abc --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"
refuse "nbdcopy: --ranges-type: must not be negative: '-1'" \
    --ranges-type=-1 --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"

msg "operands"
refuse "nbdcopy: --ranges=$T/good.txt: -: an incremental copy writes onto an existing image, not a stream" \
    --ranges="$T/good.txt" "$T/src.raw" -
[[ ! -s $T/cmd.out ]] || fail "destination -: $(wc -c <"$T/cmd.out") bytes written to stdout"
mkfifo "$T/fifo"
refuse "nbdcopy: --ranges=$T/good.txt: $T/fifo: an incremental copy writes onto an existing image, not a stream" \
    --ranges="$T/good.txt" "$T/src.raw" "$T/fifo"
refuse "nbdcopy: --ranges=$T/good.txt: $T/missing.raw: the destination must already exist: No such file or directory" \
    --ranges="$T/good.txt" "$T/src.raw" "$T/missing.raw"
[[ ! -e $T/missing.raw ]] || fail "the missing destination was created"
head -c $((size - MiB)) "$T/dst.raw" >"$T/small.raw"
cp "$T/small.raw" "$T/small.saved"
bounded_copy --ranges="$T/good.txt" "$T/src.raw" "$T/small.raw"
[[ $RC -eq 1 ]] || fail "a smaller destination: exit status $RC"
[[ $ERR == "nbdcopy: error: destination size is smaller than source size ($T/small.raw: source $size bytes, destination $((size - MiB)) bytes)" ]] ||
    fail "a smaller destination: unexpected message '$ERR'"
assert_same_file "$T/small.saved" "$T/small.raw" "a smaller destination (never resized)"
refuse "nbdcopy: --ranges=$T/good.txt: -: the source must be an image read at offsets, not a stream" \
    --ranges="$T/good.txt" - "$T/dst.raw" <"$T/src.raw"
# The rule every feature reading or writing at offsets shares
# (job/option_checks.h): a FIFO or character device is a stream too,
# refused before it is opened (a FIFO would wait for a writer).
refuse "nbdcopy: --ranges=$T/good.txt: $T/fifo: the source must be an image read at offsets, not a stream" \
    --ranges="$T/good.txt" "$T/fifo" "$T/dst.raw"
refuse "nbdcopy: --ranges=$T/good.txt: /dev/zero: the source must be an image read at offsets, not a stream" \
    --ranges="$T/good.txt" /dev/zero "$T/dst.raw"
refuse "nbdcopy: --ranges=$T/good.txt: /dev/null: an incremental copy writes onto an existing image, not a stream" \
    --ranges="$T/good.txt" "$T/src.raw" /dev/null
# Both from stdin: the source is refused, not the list.
refuse "nbdcopy: --ranges=-: -: the source must be an image read at offsets, not a stream" \
    --ranges=- - "$T/dst.raw" <"$T/good.txt"

if command -v nbdkit >/dev/null 2>&1; then
    msg "an NBD destination is never written, the refusal is in --json=FILE"
    start_nbdkit dst --filter=log file "$T/dst.raw" logfile="$T/dst.req"
    refuse "nbdcopy: --ranges=-: line 2: offset 2097152 + length 4096 = 2101248 is past the end of the image (2097152 bytes)" \
        --json="$T/report.json" --ranges=- "$T/src.raw" "$(uri_for dst)" <"$T/past.txt"
    for type in Write Zero Trim; do
        [[ $(log_count "$T/dst.req" "$type") -eq 0 ]] || fail "the refused copy sent $type requests"
    done
    python3 - "$T/report.json" "$ERR" <<'PY' || fail "--json of the refusal: $(cat "$T/report.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exit_status"] == 1, r["exit_status"]
assert "nbdcopy: " + r["error"] == sys.argv[2], (r["error"], sys.argv[2])
assert r["ranges"]["file"] == "-", r["ranges"]
assert r["bytes_written"] == 0 and r["bytes_zeroed"] == 0, r
PY
    stop_server dst
    assert_unchanged "$T/dst.raw" "$T/saved.raw" "NBD destination"
else
    msg "(no nbdkit: the NBD destination case is left out)"
fi

msg "the same destination takes a good list"
run_copy --ranges="$T/good.txt" "$T/src.raw" "$T/dst.raw"
cp "$T/saved.raw" "$T/expect.raw"
dd if="$T/src.raw" of="$T/expect.raw" bs=4K count=1 conv=notrunc status=none
dd if="$T/src.raw" of="$T/expect.raw" bs=64K skip=16 seek=16 count=1 conv=notrunc status=none
assert_same_file "$T/expect.raw" "$T/dst.raw" "the good list"
cp "$T/dst.raw" "$T/saved.raw"

msg "--ranges-type without --ranges"
# Not an incremental copy without a list: a full copy here would overwrite
# everything the user meant to keep.
refuse_words() { # WORD... then -- ARGS...
    local words=() w
    while [[ $1 != -- ]]; do words+=("$1"); shift; done
    shift
    bounded_copy "$@"
    [[ $RC -eq 1 ]] || fail "exit status $RC, expected 1 (a refusal): nbdcopy $*"
    [[ $ERR == nbdcopy:\ * ]] || fail "expected one 'nbdcopy: ' line, got: $ERR"
    one_line "$ERR_FILE" || fail "expected one 'nbdcopy: ' line, got: $ERR"
    for w in "${words[@]}"; do assert_err_contains "$w"; done
    assert_unchanged "$T/dst.raw" "$T/saved.raw" "nbdcopy $*"
}
refuse_words "--ranges-type" "--ranges" -- --ranges-type=1 "$T/src.raw" "$T/dst.raw"
msg PASS
