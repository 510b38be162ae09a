#!/usr/bin/env bash
# --json: one JSON object (parsed with Python's json module) whose figures
# match what nbdkit's log filter saw: bytes read from the source, bytes
# written and zeroed on the destination, requests issued; with the parallel
# and the synchronous engine. Also: --json=FILE with the blkhash digest and
# the --verify result; a failed copy's exit status and message; an
# interrupted copy; no password in the report; --json refused when stdout
# carries the data, --json=FILE fine then.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3
PY=/usr/bin/python3
REF=$TEST_LIB/blkhash_reference.py

size=$((8 * MiB + 1234))
make_test_file "$T/src.img" "$size"
# A password in the URI: the server ignores it, the report must not show it.
src_uri="nbd+unix://alice:s3cret@/?socket=$(sock_for src)"

# expect_fields FILE EXPR EXPECTED [EXPR EXPECTED]...: each EXPR (Python,
# with `r` the parsed report) printed as print() would is EXPECTED; fails
# naming every field that is not.  One python start per report, not one
# per field (40 ms each here).
read -r -d '' FIELDS_PY <<'PY' || true
import json, sys
args = sys.argv[2:]
if len(args) % 2:
    sys.exit("expect_fields: an EXPR without its EXPECTED")
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"cannot parse the report: {e}")
    sys.exit(1)
bad = []
for expr, want in zip(args[::2], args[1::2]):
    try:
        got = str(eval(expr)).rstrip("\n")
    except Exception as e:
        bad.append(f"cannot evaluate {expr}: {e!r}")
        continue
    if got != want:
        bad.append(f"{expr} is '{got}', expected '{want}'")
print("; ".join(bad))
sys.exit(1 if bad else 0)
PY
expect_fields() {
    local out
    out=$("$PY" -c "$FIELDS_PY" "$@") || fail "$out (report: $(<"$1"))"
}

# one_line FILE: FILE holds exactly one newline character (wc -l is 1),
# told without a process.
one_line() {
    local text=''
    IFS= read -r -d '' text <"$1" || true
    text=${text//[!$'\n']/}
    [[ ${#text} -eq 1 ]]
}

# log_figures SRC-LOG DST-LOG: "READ WRITTEN ZEROED REQUESTS EXTENTS" as
# log_sum and log_count count them (Read and Extents on the source; Write,
# Zero and Trim on the destination; zeroed = Zero + Trim bytes), in one
# awk pass instead of a dozen greps.
log_figures() {
    awk '
        function hex(s,    i, n) {
            s = tolower(substr(s, 3)); n = 0
            for (i = 1; i <= length(s); i++)
                n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return n
        }
        match($0, /connection=[0-9]+ [A-Za-z]+ id=/) {
            split(substr($0, RSTART, RLENGTH), w, " "); type = w[2]
            count = 0
            if (match($0, /count=0x[0-9a-fA-F]*/)) count = hex(substr($0, RSTART + 6, RLENGTH - 6))
            if (FILENAME == src) {
                if (type == "Read") { read += count; requests++ }
                if (type == "Extents") extents++
            } else if (type == "Write" || type == "Zero" || type == "Trim") {
                requests++
                if (type == "Write") written += count; else zeroed += count
            }
        }
        END { printf "%.0f %.0f %.0f %d %d\n", read, written, zeroed, requests, extents }
    ' src="$1" "$1" "$2"
}

for mode in default --synchronous; do
    opt=(); [[ $mode == default ]] || opt=("$mode")
    msg "--json $mode: figures against nbdkit's log"
    stop_server src; stop_server dst; rm -f "$T/src-log.txt" "$T/dst-log.txt"
    start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/src-log.txt"
    start_nbdkit dst --filter=log memory size="$size" logfile="$T/dst-log.txt"
    "$NBDCOPY" "${opt[@]}" --json "$src_uri" "$(uri_for dst)" >"$T/report.json" 2>"$T/err.txt" ||
        fail "copy failed: $(<"$T/err.txt")"
    msg "report: $(<"$T/report.json")"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "--json $mode"
    one_line "$T/report.json" || fail "stdout is not exactly one line"
    [[ $(<"$T/report.json") != *s3cret* ]] || fail "the password is in the report"
    read -r reads writes zeroes requests extents < <(log_figures "$T/src-log.txt" "$T/dst-log.txt")
    msg "nbdkit saw: read $reads, written $writes, zeroed $zeroes, $requests requests"
    ((writes > 0 && zeroes > 0)) || fail "test image gave no writes or no zeroes"
    fields=(
        'r["source"]' "nbd+unix://alice:***@/?socket=$(sock_for src)"
        'r["destination"]' "$(uri_for dst)"
        'r["size"]' "$size"
        'r["bytes_copied"]' "$size"
        'r["bytes_read"]' "$reads"
        'r["bytes_written"]' "$writes"
        'r["bytes_zeroed"]' "$zeroes"
        'r["requests"]' "$requests"
        'r["extent_queries"]' "$extents"
        'r["bytes_unmapped"]' 0
        'r["bytes_written"] + r["bytes_zeroed"] + r["bytes_skipped"]' "$size"
        'r["synchronous"]' "$([[ $mode == default ]] && echo False || echo True)"
        '1 <= r["workers"] <= r["connections"]' True
        'r["request_size"] > 0 and r["queue_size"] > 0' True
        'r["elapsed_seconds"] > 0 and r["bytes_per_second"] > 0' True
        '(r["exit_status"], r["error"], r["interrupted_by"])' "(0, None, None)"
        '(r["blkhash"], r["verify"])' "(None, None)"
    )
    if [[ $mode == default ]]; then
        fields+=('0 < r["final_request_size"] <= r["request_size"]' True
                 '0 < r["final_budget"] <= r["queue_size"]' True)
    else
        fields+=('(r["final_budget"], r["final_request_size"])' "(None, None)")
    fi
    expect_fields "$T/report.json" "${fields[@]}"
done

msg "--json=FILE with --blkhash and --verify to a file"
want=$("$PY" "$REF" "$T/src.img")
"$NBDCOPY" --json="$T/report.json" --blkhash --verify "$T/src.img" "$T/out.img" \
    >"$T/stdout.txt" 2>"$T/err.txt" || fail "copy failed: $(<"$T/err.txt")"
[[ $(<"$T/stdout.txt") == "$want" ]] || fail "digest on stdout: $(<"$T/stdout.txt")"
expect_fields "$T/report.json" \
    'r["blkhash"]' "{'algorithm': 'sha256', 'block_size': 65536, 'digest': '$want'}" \
    'r["verify"]' "{'match': True, 'destination_digest': '$want', 'destination_checksum': None}"

msg "--json with --blkhash: stdout is the report alone, digest inside"
"$NBDCOPY" --json --blkhash "$T/src.img" null: >"$T/report.json" 2>"$T/err.txt" ||
    fail "checksum failed: $(<"$T/err.txt")"
one_line "$T/report.json" || fail "more than the report on stdout"
expect_fields "$T/report.json" 'r["blkhash"]["digest"]' "$want"

msg "--json on a failed copy"
start_nbdkit bad -r --filter=error file "$T/src.img" error-pread-rate=100% error=EIO
rc=0
"$NBDCOPY" --json "$(uri_for bad)" "$T/out2.img" >"$T/report.json" 2>"$T/err.txt" || rc=$?
[[ $rc -eq 1 ]] || fail "exit status $rc, expected 1"
expect_fields "$T/report.json" \
    'r["exit_status"]' 1 \
    '"nbdcopy: " + r["error"]' "$(<"$T/err.txt")"

msg "--json on a copy stopped by SIGTERM"
"$NBDCOPY" --json="$T/report.json" --progress=3 -R 2 --request-size=64K -- \
    [ nbdkit --log=null --filter=delay pattern 64M delay-read=200ms ] "$T/out3.img" \
    3>"$T/progress.txt" 2>"$T/err.txt" &
pid=$!
# Until a line "N/100" with N > 0 (read in bash: no process per look).
started=$'(^|\n)[1-9][0-9]*/100(\n|$)'
for ((i = 0; i < 600; i++)); do
    [[ -s $T/progress.txt && $(<"$T/progress.txt") =~ $started ]] && break
    nap 0.1
done
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
[[ $rc -eq 143 ]] || fail "exit status $rc after SIGTERM"
expect_fields "$T/report.json" \
    '(r["exit_status"], r["interrupted_by"])' "(143, 'SIGTERM')" \
    '"nbdcopy: " + r["error"]' "$(<"$T/err.txt")" \
    '0 < r["bytes_copied"] < r["size"]' True

msg "stdout carries the data"
expect_fail "$NBDCOPY" --json "$T/src.img" -
assert_err_contains "--json: the report would be mixed into the data on stdout; use --json=FILE"
"$NBDCOPY" --json="$T/report.json" "$T/src.img" - >"$T/out4.img" 2>"$T/err.txt" ||
    fail "copy to stdout failed: $(<"$T/err.txt")"
assert_same_file "$T/src.img" "$T/out4.img" "--json=FILE, data on stdout"
expect_fields "$T/report.json" \
    '(r["destination"], r["bytes_written"] + r["bytes_zeroed"] + r["bytes_skipped"])' "('-', $size)"
msg PASS
