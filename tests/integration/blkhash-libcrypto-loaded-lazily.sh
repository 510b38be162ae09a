#!/usr/bin/env bash
# libcrypto is loaded only by a copy that makes a checksum (--blkhash,
# --verify): linked in, it cost every start of nbdcopy about 120 page
# faults and 8 ms of CPU (hash/digest_library.h). The dynamic loader's own
# record (LD_DEBUG=files names every library it maps, at start-up or by
# dlopen) shows which runs mapped it; the runs that do also print the right
# digest, and -V, a copy, and an error before any copy never map it.
# As root, in a mount namespace where libcrypto cannot be loaded (/dev/null
# bound over it): a plain copy still works, and --blkhash, --verify and
# --checkpoint each fail with one line naming the option and the library,
# before the destination is touched.
# labels: quick root
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

# The library file the loader maps for the soname nbdcopy asks for.
lib=$(sed -n 's/.*file=\(libcrypto\.so\.[0-9]*\) \[0\];  generating link map.*/\1/p' "$T"/ld.* | head -1)
path=$(sed -n 's/.*calling init: \(.*libcrypto\.so\.[0-9]*\)$/\1/p' "$T"/ld.* | head -1)
[[ -n $lib && -e $path ]] || fail "cannot find the libcrypto the loader mapped (soname '$lib', file '$path')"
if [[ $(id -u) -ne 0 ]] || ! unshare -m true 2>/dev/null; then
    msg "not root (or no mount namespaces): the case without libcrypto is left out"
    msg PASS
    exit 0
fi
make_random_file "$T/old.img" $((2 * MiB + 512))
cp "$T/old.img" "$T/keep.img"
# without_libcrypto LABEL NBDCOPY-ARGS...: runs nbdcopy where $path reads as
# empty; RC, and its stderr in $T/err.
without_libcrypto() {
    local label=$1
    shift
    RC=0
    unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$path" \
        "$NBDCOPY" "$@" >"$T/out" 2>"$T/err" || RC=$?
}
rm -f "$T/dst.img"
without_libcrypto copy "$T/src.img" "$T/dst.img"
[[ $RC -eq 0 ]] || fail "without libcrypto, a plain copy failed ($RC): $(<"$T/err")"
assert_same_file "$T/src.img" "$T/dst.img" "a copy without libcrypto"
for option in --blkhash --verify --checkpoint="$T/cp.map"; do
    rm -f "$T/cp.map"
    without_libcrypto "$option" "$option" "$T/src.img" "$T/keep.img"
    [[ $RC -eq 1 ]] || fail "$option without libcrypto: exit $RC (expected 1): $(<"$T/err")"
    want="nbdcopy: ${option%%=*}: cannot load $lib: $path: "
    mapfile -t lines <"$T/err"
    [[ ${#lines[@]} -eq 1 && ${lines[0]} == "$want"* ]] ||
        fail "$option without libcrypto: expected one line '$want...': $(<"$T/err")"
    cmp -s "$T/old.img" "$T/keep.img" || fail "$option without libcrypto changed the destination"
    [[ ! -e $T/cp.map ]] || fail "$option without libcrypto wrote a checkpoint file"
done
msg PASS
