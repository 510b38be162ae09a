#!/usr/bin/env bash
# --checksum=ALGO:HEX, CDI's form: the expected digest.
# - The right one (either case) passes: exit 0, the copy made, the line
#   printed.
# - A wrong one fails the copy with exit status 3, one line naming the
#   algorithm, the expected and the actual digest; nothing on stdout; the
#   --json report says the same ("checksum": expected, digest, match false;
#   exit_status 3, the error).
# - To stdout (the data), an expected digest is the check: the data flows,
#   no line is mixed into it, and a wrong one still exits 3.
# Refused before anything is opened (exit 1, one line naming the option and
# why, no destination created, no request reaching an NBD source): a HEX of
# the wrong length or not hex, an unknown algorithm, --checksum-file
# without --checksum, the digest on stdout that carries the data,
# --checksum with an incremental copy (--ranges, --dirty-bitmap), and a
# --checksum-file that is the source (or a link to it), the destination,
# another output file (--blkhash-file, --json, --checkpoint), standard
# output by another name while it carries the data or the report, a
# directory or in a missing folder.
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit sha256sum md5sum python3

size=$((3 * MiB + 1001))
make_test_file "$T/src.img" "$size"
sum256=$(sha256sum <"$T/src.img" | cut -d' ' -f1)
summd5=$(md5sum <"$T/src.img" | cut -d' ' -f1)
wrong=$(printf '%064d' 7)

msg "the right digest passes, whatever its case"
run_copy --checksum="sha256:$sum256" "$T/src.img" "$T/dst.img" >"$T/out.txt"
cmp "$T/src.img" "$T/dst.img" || fail "copy differs"
[[ $(<"$T/out.txt") == "$sum256  $T/dst.img" ]] || fail "line: $(<"$T/out.txt")"
run_copy --checksum="MD5:${summd5^^}" "$T/src.img" null: >"$T/out.txt"
[[ $(<"$T/out.txt") == "$summd5  $T/src.img" ]] || fail "line: $(<"$T/out.txt")"

msg "a wrong digest: exit 3, one line naming both"
rc=0
"$NBDCOPY" --checksum="sha256:$wrong" "$T/src.img" "$T/dst2.img" >"$T/cmd.out" 2>"$T/cmd.err" || rc=$?
ERR=$(<"$T/cmd.err")
msg "stderr: $ERR"
[[ $rc -eq 3 ]] || fail "a wrong digest exited $rc, expected 3"
[[ $ERR == "nbdcopy: --checksum: $T/src.img: sha256 mismatch: expected $wrong, got $sum256" ]] ||
    fail "unexpected message: $ERR"
[[ ! -s $T/cmd.out ]] || fail "a mismatch printed on stdout: $(cat "$T/cmd.out")"

msg "the same in --json"
rc=0
"$NBDCOPY" --json="$T/report.json" --checksum="sha256:$wrong" "$T/src.img" null: \
    >"$T/cmd.out" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 3 ]] || fail "--json: exited $rc, expected 3"
python3 - "$T/report.json" "$wrong" "$sum256" <<'PY' || fail "--json report is wrong"
import json, sys
report = json.load(open(sys.argv[1]))
checksum = report["checksum"]
assert checksum == {"algorithm": "sha256", "digest": sys.argv[3], "expected": sys.argv[2],
                    "match": False}, checksum
assert report["exit_status"] == 3, report["exit_status"]
assert "mismatch" in report["error"] and sys.argv[2] in report["error"], report["error"]
PY
"$NBDCOPY" --json --checksum="sha256:$sum256" "$T/src.img" null: >"$T/report.json" ||
    fail "--json with the right digest failed"
python3 - "$T/report.json" "$sum256" <<'PY' || fail "--json report (match) is wrong"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines  # stdout holds the report alone
report = json.loads(lines[0])
assert report["checksum"]["match"] is True and report["checksum"]["digest"] == sys.argv[2]
assert report["exit_status"] == 0
PY

msg "to stdout, an expected digest checks the data stream"
"$NBDCOPY" --checksum="sha256:$sum256" "$T/src.img" - >"$T/piped.img" ||
    fail "right digest to stdout failed"
cmp "$T/src.img" "$T/piped.img" || fail "stdout data differs (a line mixed in?)"
rc=0
"$NBDCOPY" --checksum="sha256:$wrong" "$T/src.img" - >"$T/piped.img" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 3 ]] || fail "wrong digest to stdout exited $rc, expected 3"
grep -q "sha256 mismatch: expected $wrong, got $sum256" "$T/cmd.err" ||
    fail "wrong digest to stdout: $(cat "$T/cmd.err")"

# ---------------------------------------------------------------------------
# refused MESSAGE ARGS...: exit 1, exactly "nbdcopy: MESSAGE" on stderr,
# nothing on stdout, $T/new.img not created.
refused() {
    local want=$1
    shift
    rm -f "$T/new.img"
    expect_fail "$NBDCOPY" "$@"
    [[ $ERR == "nbdcopy: $want" ]] || fail "expected 'nbdcopy: $want', got: $ERR"
    [[ $(wc -l <"$T/cmd.err") -eq 1 ]] || fail "more than one line"
    [[ ! -s $T/cmd.out ]] || fail "something was printed on stdout: $*"
    [[ ! -e $T/new.img ]] || fail "the destination was created: $*"
    rc=0
    "$NBDCOPY" "$@" >/dev/null 2>&1 || rc=$?
    [[ $rc -eq 1 ]] || fail "exit status $rc, expected 1: $*"
}

start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/requests.txt"
src=$(uri_for src)
msg "malformed expected digests and algorithms"
refused "--checksum: sha256 digests are 64 hex digits, not 'abc'" \
    --checksum=sha256:abc "$src" "$T/new.img"
refused "--checksum: sha256 digests are 64 hex digits, not '${sum256}0'" \
    --checksum="sha256:${sum256}0" "$src" "$T/new.img"
refused "--checksum: md5 digests are 32 hex digits, not '${summd5:0:31}g'" \
    --checksum="md5:${summd5:0:31}g" "$src" "$T/new.img"
refused "--checksum: sha512 digests are 128 hex digits, not '$sum256'" \
    --checksum="sha512:$sum256" "$src" "$T/new.img"
refused "--checksum: sha1 digests are 40 hex digits, not ''" --checksum=sha1: "$src" "$T/new.img"
refused "--checksum: missing value after '='" --checksum= "$src" "$T/new.img"
for a in sha3 crc32 sha384 "sha256 "; do
    refused "--checksum: unknown algorithm '$a' (expected md5, sha1, sha256 or sha512)" \
        --checksum="$a" "$src" "$T/new.img"
done
refused "--checksum: unknown algorithm 'blake2' (expected md5, sha1, sha256 or sha512)" \
    --checksum="blake2:$sum256" "$src" "$T/new.img"

msg "option combinations"
refused "--checksum-file: needs --checksum" --checksum-file="$T/sum" "$src" "$T/new.img"
refused "--checksum: the digest would be mixed into the data on stdout; use --checksum-file, or --checksum=ALGO:HEX to check it" \
    --checksum "$src" -
[[ ! -e $T/sum ]] || fail "--checksum-file was created"
cp "$T/src.img" "$T/new.img.keep"
echo "0 4096" >"$T/ranges.txt"
cp "$T/new.img.keep" "$T/new.img"
expect_fail "$NBDCOPY" --checksum --ranges="$T/ranges.txt" "$src" "$T/new.img"
assert_err_contains "--checksum: cannot be used with --ranges (the digest covers the whole source, an incremental copy reads only the listed ranges"
cmp "$T/new.img" "$T/new.img.keep" || fail "--ranges --checksum changed the destination"
expect_fail "$NBDCOPY" --checksum --dirty-bitmap=b0 "$src" "$T/new.img"
assert_err_contains "--checksum: cannot be used with --dirty-bitmap (the digest covers the whole source"
stop_server src
n=$(log_count "$T/requests.txt" Read)
[[ $n -eq 0 ]] || fail "$n Read requests reached the source before a refusal"
msg "output files that would destroy an operand, another output, or cannot be written"
rm -f "$T/new.img"
cp "$T/src.img" "$T/keep.img"
cp "$T/src.img" "$T/src2.img"
expect_fail "$NBDCOPY" --checksum --checksum-file="$T/src2.img" "$T/src2.img" "$T/new.img"
[[ $ERR == "nbdcopy: --checksum-file: $T/src2.img: is also the source (writing it would destroy that)" ]] ||
    fail "checksum-file = source: $ERR"
cmp "$T/src2.img" "$T/keep.img" || fail "the source was changed"
ln -sf "$T/src2.img" "$T/link.img"
expect_fail "$NBDCOPY" --checksum --checksum-file="$T/link.img" "$T/src2.img" null:
assert_err_contains "is also the source"
expect_fail "$NBDCOPY" --checksum --checksum-file="$T/new.img" "$T/src.img" "$T/new.img"
[[ $ERR == "nbdcopy: --checksum-file: $T/new.img: is also the destination (writing it would destroy that)" ]] ||
    fail "checksum-file = destination: $ERR"
[[ ! -e $T/new.img ]] || fail "the destination was created"
expect_fail "$NBDCOPY" --blkhash --checksum --blkhash-file="$T/d" --checksum-file="$T/d" "$T/src.img" null:
assert_err_contains "--checksum-file: $T/d: is also --blkhash-file's file"
expect_fail "$NBDCOPY" --checksum --json="$T/d" --checksum-file="$T/d" "$T/src.img" null:
assert_err_contains "--json: $T/d: is also --checksum-file's file"
# (The JSON report of a refused run is still written: there, and nothing else.)
grep -q '"exit_status":1' "$T/d" || fail "--json=FILE of the refusal: $(cat "$T/d")"
rm -f "$T/d"
expect_fail "$NBDCOPY" --checksum --checkpoint="$T/m" --checksum-file="$T/m" "$T/src.img" "$T/new.img"
assert_err_contains "--checksum-file: $T/m: is also --checkpoint's file"
[[ ! -e $T/d && ! -e $T/m ]] || fail "an output file was written"
expect_fail "$NBDCOPY" --checksum --checksum-file="$T/no/such/dir/sum" "$T/src.img" "$T/new.img"
[[ $ERR == "nbdcopy: --checksum-file: $T/no/such/dir/sum: No such file or directory" ]] ||
    fail "missing folder: $ERR"
expect_fail "$NBDCOPY" --checksum --checksum-file="$T" "$T/src.img" "$T/new.img"
[[ $ERR == "nbdcopy: --checksum-file: $T: Is a directory" ]] || fail "a directory: $ERR"
[[ ! -e $T/new.img ]] || fail "the destination was created before a refusal"
# Standard output by another name: refused when it carries the data or the report.
rc=0
"$NBDCOPY" --checksum --checksum-file=/dev/stdout "$T/src.img" - >"$T/mixed.out" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 1 && ! -s $T/mixed.out ]] || fail "--checksum-file=/dev/stdout with - : rc $rc"
grep -qxF "nbdcopy: --checksum-file: /dev/stdout: is standard output, which carries the data" \
    "$T/cmd.err" || fail "stdout by name: $(cat "$T/cmd.err")"
rc=0
"$NBDCOPY" --json --checksum --checksum-file=/dev/stdout "$T/src.img" null: >"$T/mixed.out" 2>"$T/cmd.err" || rc=$?
[[ $rc -eq 1 ]] || fail "--checksum-file=/dev/stdout with --json: rc $rc"
grep -qF "is standard output, which carries the JSON report" "$T/cmd.err" ||
    fail "stdout by name, JSON: $(cat "$T/cmd.err")"
# --json=/dev/stdout is the report on stdout: the digest goes into it, not beside it.
"$NBDCOPY" --json=/dev/stdout --checksum "$T/src.img" null: >"$T/report.json" ||
    fail "--json=/dev/stdout --checksum failed"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["checksum"]["digest"] == sys.argv[2]' \
    "$T/report.json" "$sum256" || fail "--json=/dev/stdout: not one report: $(cat "$T/report.json")"
# Character devices clash with nothing.
run_copy --checksum --checksum-file=/dev/null --json=/dev/null "$T/src.img" null:

msg PASS
