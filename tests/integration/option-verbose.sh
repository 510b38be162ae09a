#!/usr/bin/env bash
# -v / --verbose: stderr names the source and the destination, the copy is
# correct, and the TLS pre-shared key from the PSK file never appears on
# stderr (neither whole nor its first 16 hex digits, in any case).
source "$(dirname "$0")/lib/lib.sh"
make_psk

size=$((2 * MiB + 1234))
make_test_file "$T/src.img" "$size"
make_random_file "$T/dst.img" "$size"
start_nbdkit tls --tls=require --tls-psk="$PSK_FILE" file "$T/dst.img"

for opt in -v --verbose; do
    msg "$opt file -> TLS nbd"
    "$NBDCOPY" "$opt" "$T/src.img" "$(tls_uri_for tls)" 2>"$T/err.txt" ||
        fail "$opt copy failed: $(grep -v 'libnbd: debug' "$T/err.txt" | head -c 500)"
    grep -qF -- "$T/src.img" "$T/err.txt" || fail "$opt: source name not printed"
    grep -qF -- "$(sock_for tls)" "$T/err.txt" || fail "$opt: destination not printed"
    if grep -qiF -- "${PSK_KEY:0:16}" "$T/err.txt"; then
        fail "$opt: the PSK key appears on stderr: $(grep -iF "${PSK_KEY:0:16}" "$T/err.txt" | head -3)"
    fi
    # nbdkit file writes straight into dst.img: check it, then re-randomise.
    assert_same_file "$T/src.img" "$T/dst.img" "$opt copy to TLS"
    make_random_file "$T/dst.img" "$size"
done

msg "-v nbd -> file"
start_nbdkit src -r file "$T/src.img"
"$NBDCOPY" -v "$(uri_for src)" "$T/out.img" 2>"$T/err2.txt" || fail "-v nbd -> file failed"
assert_same_file "$T/src.img" "$T/out.img" "-v nbd -> file"
grep -qF -- "$(sock_for src)" "$T/err2.txt" || fail "-v: source URI not printed"
grep -qF -- "$T/out.img" "$T/err2.txt" || fail "-v: destination file not printed"
msg PASS
