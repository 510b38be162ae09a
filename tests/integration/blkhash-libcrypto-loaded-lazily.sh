#!/usr/bin/env bash
# libcrypto is loaded only by a copy that makes a checksum (--blkhash,
# --verify): linked in, it cost every start of nbdcopy about 120 page
# faults and 8 ms of CPU (hash/digest_library.h). The dynamic loader's own
# record (LD_DEBUG=files names every library it maps, at start-up or by
# dlopen) shows which runs mapped it; the runs that do also print the right
# digest, and -V, a copy, and an error before any copy never map it.
# labels: quick
source "$(dirname "$0")/lib/lib.sh"
REF=$TEST_LIB/blkhash_reference.py

make_test_file "$T/src.img" $((2 * MiB + 512))

# loads_libcrypto LABEL ARGS...: runs nbdcopy ARGS under LD_DEBUG=files
# (the loader writes to $T/ld.*.PID), leaving its stdout in $T/out and its
# exit status in RC; LOADED is yes or no.
loads_libcrypto() {
    local label=$1
    shift
    rm -f "$T"/ld.*
    RC=0
    LD_DEBUG=files LD_DEBUG_OUTPUT="$T/ld" "$NBDCOPY" "$@" >"$T/out" 2>"$T/err" || RC=$?
    compgen -G "$T/ld.*" >/dev/null || fail "$label: the loader wrote no LD_DEBUG record"
    # Every run maps libc: the record is read right.
    grep -q "file=libc\.so" "$T"/ld.* || fail "$label: libc is not in the loader's record"
    LOADED=no
    grep -q "file=libcrypto\.so" "$T"/ld.* && LOADED=yes
    return 0
}

loads_libcrypto version -V
[[ $RC -eq 0 && $LOADED == no ]] || fail "-V: exit $RC, libcrypto loaded: $LOADED"

loads_libcrypto copy "$T/src.img" "$T/dst.img"
[[ $RC -eq 0 ]] || fail "copy: exit $RC: $(<"$T/err")"
assert_same_file "$T/src.img" "$T/dst.img" "copy"
[[ $LOADED == no ]] || fail "a copy without a checksum loaded libcrypto"

loads_libcrypto refused --blkhash=sha7 "$T/src.img" null:
[[ $RC -ne 0 ]] || fail "--blkhash=sha7 was accepted"
grep -q "unknown algorithm 'sha7'" "$T/err" || fail "--blkhash=sha7: $(<"$T/err")"
[[ $LOADED == no ]] || fail "--blkhash=sha7 loaded libcrypto before refusing"

want=$(python3 "$REF" "$T/src.img" sha256 65536)
loads_libcrypto blkhash --blkhash "$T/src.img" null:
[[ $RC -eq 0 ]] || fail "--blkhash: exit $RC: $(<"$T/err")"
[[ $(<"$T/out") == "$want" ]] || fail "--blkhash printed $(<"$T/out"), the reference $want"
[[ $LOADED == yes ]] || fail "--blkhash did not load libcrypto (the check cannot see it)"

rm -f "$T/dst.img"
loads_libcrypto verify --verify "$T/src.img" "$T/dst.img"
[[ $RC -eq 0 ]] || fail "--verify: exit $RC: $(<"$T/err")"
assert_same_file "$T/src.img" "$T/dst.img" "--verify"
[[ $LOADED == yes ]] || fail "--verify did not load libcrypto"
msg PASS
