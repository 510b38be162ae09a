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

# json_field FILE EXPR: evaluates EXPR (Python) with `r` the parsed report.
json_field() {
    "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
expect_field() { # FILE EXPR EXPECTED
    local got
    got=$(json_field "$1" "$2") || fail "cannot evaluate $2 on $(cat "$1")"
    [[ $got == "$3" ]] || fail "$2 is '$got', expected '$3' (report: $(cat "$1"))"
}

for mode in default --synchronous; do
    opt=(); [[ $mode == default ]] || opt=("$mode")
    msg "--json $mode: figures against nbdkit's log"
    stop_server src; stop_server dst; rm -f "$T/src-log.txt" "$T/dst-log.txt"
    start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/src-log.txt"
    start_nbdkit dst --filter=log memory size="$size" logfile="$T/dst-log.txt"
    "$NBDCOPY" "${opt[@]}" --json "$src_uri" "$(uri_for dst)" >"$T/report.json" 2>"$T/err.txt" ||
        fail "copy failed: $(cat "$T/err.txt")"
    msg "report: $(cat "$T/report.json")"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "--json $mode"
    [[ $(wc -l <"$T/report.json") -eq 1 ]] || fail "stdout is not exactly one line"
    ! grep -q s3cret "$T/report.json" || fail "the password is in the report"
    reads=$(log_sum "$T/src-log.txt" Read)
    writes=$(log_sum "$T/dst-log.txt" Write)
    zeroes=$(( $(log_sum "$T/dst-log.txt" Zero) + $(log_sum "$T/dst-log.txt" Trim) ))
    requests=$(( $(log_count "$T/src-log.txt" Read) + $(log_count "$T/dst-log.txt" Write) +
                 $(log_count "$T/dst-log.txt" Zero) + $(log_count "$T/dst-log.txt" Trim) ))
    msg "nbdkit saw: read $reads, written $writes, zeroed $zeroes, $requests requests"
    ((writes > 0 && zeroes > 0)) || fail "test image gave no writes or no zeroes"
    expect_field "$T/report.json" 'r["source"]' "nbd+unix://alice:***@/?socket=$(sock_for src)"
    expect_field "$T/report.json" 'r["destination"]' "$(uri_for dst)"
    expect_field "$T/report.json" 'r["size"]' "$size"
    expect_field "$T/report.json" 'r["bytes_copied"]' "$size"
    expect_field "$T/report.json" 'r["bytes_read"]' "$reads"
    expect_field "$T/report.json" 'r["bytes_written"]' "$writes"
    expect_field "$T/report.json" 'r["bytes_zeroed"]' "$zeroes"
    expect_field "$T/report.json" 'r["requests"]' "$requests"
    expect_field "$T/report.json" 'r["extent_queries"]' "$(log_count "$T/src-log.txt" Extents)"
    expect_field "$T/report.json" 'r["bytes_unmapped"]' 0
    expect_field "$T/report.json" 'r["bytes_written"] + r["bytes_zeroed"] + r["bytes_skipped"]' "$size"
    expect_field "$T/report.json" 'r["synchronous"]' "$([[ $mode == default ]] && echo False || echo True)"
    expect_field "$T/report.json" '1 <= r["workers"] <= r["connections"]' True
    expect_field "$T/report.json" 'r["request_size"] > 0 and r["queue_size"] > 0' True
    if [[ $mode == default ]]; then
        expect_field "$T/report.json" '0 < r["final_request_size"] <= r["request_size"]' True
        expect_field "$T/report.json" '0 < r["final_budget"] <= r["queue_size"]' True
    else
        expect_field "$T/report.json" '(r["final_budget"], r["final_request_size"])' "(None, None)"
    fi
    expect_field "$T/report.json" 'r["elapsed_seconds"] > 0 and r["bytes_per_second"] > 0' True
    expect_field "$T/report.json" '(r["exit_status"], r["error"], r["interrupted_by"])' "(0, None, None)"
    expect_field "$T/report.json" '(r["blkhash"], r["verify"])' "(None, None)"
done

msg "--json=FILE with --blkhash and --verify to a file"
want=$("$PY" "$REF" "$T/src.img")
"$NBDCOPY" --json="$T/report.json" --blkhash --verify "$T/src.img" "$T/out.img" \
    >"$T/stdout.txt" 2>"$T/err.txt" || fail "copy failed: $(cat "$T/err.txt")"
[[ $(cat "$T/stdout.txt") == "$want" ]] || fail "digest on stdout: $(cat "$T/stdout.txt")"
expect_field "$T/report.json" 'r["blkhash"]' "{'algorithm': 'sha256', 'block_size': 65536, 'digest': '$want'}"
expect_field "$T/report.json" 'r["verify"]' "{'match': True, 'destination_digest': '$want'}"

msg "--json with --blkhash: stdout is the report alone, digest inside"
"$NBDCOPY" --json --blkhash "$T/src.img" null: >"$T/report.json" 2>"$T/err.txt" ||
    fail "checksum failed: $(cat "$T/err.txt")"
[[ $(wc -l <"$T/report.json") -eq 1 ]] || fail "more than the report on stdout"
expect_field "$T/report.json" 'r["blkhash"]["digest"]' "$want"

msg "--json on a failed copy"
start_nbdkit bad -r --filter=error file "$T/src.img" error-pread-rate=100% error=EIO
rc=0
"$NBDCOPY" --json "$(uri_for bad)" "$T/out2.img" >"$T/report.json" 2>"$T/err.txt" || rc=$?
[[ $rc -eq 1 ]] || fail "exit status $rc, expected 1"
expect_field "$T/report.json" 'r["exit_status"]' 1
expect_field "$T/report.json" '"nbdcopy: " + r["error"]' "$(cat "$T/err.txt")"

msg "--json on a copy stopped by SIGTERM"
"$NBDCOPY" --json="$T/report.json" --progress=3 -R 2 --request-size=64K -- \
    [ nbdkit --log=null --filter=delay pattern 64M delay-read=200ms ] "$T/out3.img" \
    3>"$T/progress.txt" 2>"$T/err.txt" &
pid=$!
for i in $(seq 600); do
    grep -q '^[1-9][0-9]*/100$' "$T/progress.txt" 2>/dev/null && break
    sleep 0.1
done
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
[[ $rc -eq 143 ]] || fail "exit status $rc after SIGTERM"
expect_field "$T/report.json" '(r["exit_status"], r["interrupted_by"])' "(143, 'SIGTERM')"
expect_field "$T/report.json" '"nbdcopy: " + r["error"]' "$(cat "$T/err.txt")"
expect_field "$T/report.json" '0 < r["bytes_copied"] < r["size"]' True

msg "stdout carries the data"
expect_fail "$NBDCOPY" --json "$T/src.img" -
assert_err_contains "--json: the report would be mixed into the data on stdout; use --json=FILE"
"$NBDCOPY" --json="$T/report.json" "$T/src.img" - >"$T/out4.img" 2>"$T/err.txt" ||
    fail "copy to stdout failed: $(cat "$T/err.txt")"
assert_same_file "$T/src.img" "$T/out4.img" "--json=FILE, data on stdout"
expect_field "$T/report.json" '(r["destination"], r["bytes_written"] + r["bytes_zeroed"] + r["bytes_skipped"])' "('-', $size)"
msg PASS
