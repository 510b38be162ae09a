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
# without --checksum, the digest on stdout that carries the data, and
# --checksum with an incremental copy (--ranges, --dirty-bitmap).
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
msg PASS
