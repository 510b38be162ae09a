#!/usr/bin/env bash
# --verify on correct copies succeeds (exit 0) and the copy is right: to a
# new file, a stale file, NBD memory, qcow2 through [ qemu-nbd ], a larger
# NBD destination (only the first source-size bytes are compared; the tail
# is left alone), from stdin.  With -v the two digests are printed
# ("nbdcopy: verify: source HEX" / "... destination HEX"), are equal, and
# equal the Python reference with the default settings (sha256/64K) or the
# --blkhash ones.  The destination really is read back: an NBD destination
# sees Read requests covering the source size.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3
REF=$TEST_LIB/blkhash_reference.py

# verify_digests ALGO: from the stderr of a -v run (its lines other than
# libnbd's debug ones, which run_v keeps in SHORT) extract the two verify
# digests, require exactly one of each, equal, of ALGO's length; set
# SRC_DIGEST.  (The shell matches them: no process per digest.)
verify_digests() {
    local n sl=() dl=() line s d
    case $1 in md5) n=32 ;; sha1) n=40 ;; sha256) n=64 ;; sha512) n=128 ;; esac
    for line in "${SHORT[@]}"; do
        [[ $line =~ ^nbdcopy:\ verify:\ source\ [0-9a-f]+$ ]] && sl+=("$line")
        [[ $line =~ ^nbdcopy:\ verify:\ destination\ [0-9a-f]+$ ]] && dl+=("$line")
    done
    ((${#sl[@]} == 1)) ||
        fail "-v: expected one 'nbdcopy: verify: source HEX' line, got: '${sl[*]}'"
    ((${#dl[@]} == 1)) ||
        fail "-v: expected one 'nbdcopy: verify: destination HEX' line, got: '${dl[*]}'"
    s=${sl[0]##* } d=${dl[0]##* }
    [[ ${#s} -eq $n ]] || fail "-v: source digest '$s' is not $1"
    [[ $s == "$d" ]] || fail "-v: source digest $s != destination digest $d"
    SRC_DIGEST=$s
}

# run_v ARGS...: like run_copy, for -v runs: the whole stderr stays in
# $T/cmd.err, its non-libnbd lines go to the array SHORT (one grep over the
# ~5000 debug lines), and the last 20 of those are shown (run_copy pipes
# the verbose stderr into "head", which can kill it with SIGPIPE under
# pipefail).
run_v() {
    msg "run: nbdcopy $*"
    local rc=0
    "$NBDCOPY" "$@" 2>"$T/cmd.err" || rc=$?
    grep -v '^libnbd: debug' "$T/cmd.err" >"$T/cmd.short" || true
    mapfile -t SHORT <"$T/cmd.short"
    local shown=("${SHORT[@]: -20}")
    ((${#shown[@]} == 0)) || printf '    stderr: %s\n' "${shown[@]}" >&2
    [[ $rc -eq 0 ]] || fail "nbdcopy $* exited with status $rc"
}

check() { # WHAT EXPECTED ACTUAL
    [[ $3 == "$2" ]] || fail "$1: got $3, expected $2"
}

size=$((6 * MiB + 2560))   # multiple of 512 (qcow2), not of 64K
make_test_file "$T/src.img" "$size"
mapfile -t R < <(python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from blkhash_reference import blkhash
print(blkhash(sys.argv[2]))
print(blkhash(sys.argv[2], "md5", 4096))
' "$(dirname "$REF")" "$T/src.img")
[[ ${#R[@]} -eq 2 ]] || fail "python reference failed"
sha256_64k=${R[0]} md5_4k=${R[1]}

msg "file -> new file"
run_copy --verify "$T/src.img" "$T/dst1.img" >"$T/stdout.txt"
assert_same_file "$T/src.img" "$T/dst1.img" "--verify file -> file"
[[ ! -s $T/stdout.txt ]] || fail "--verify without --blkhash printed on stdout"

msg "file -> stale file, -v"
make_random_file "$T/dst2.img" $((2 * MiB))
run_v -v --verify "$T/src.img" "$T/dst2.img" >"$T/stdout.txt"
assert_same_file "$T/src.img" "$T/dst2.img" "--verify -v file -> stale file"
verify_digests sha256
check "-v digest (default sha256/64K)" "$sha256_64k" "$SRC_DIGEST"

msg "file -> file, --blkhash=md5/4K --verify -v: same settings for both"
run_v -v --blkhash=md5/4K --verify "$T/src.img" "$T/dst3.img" >"$T/stdout.txt"
verify_digests md5
check "-v digest with --blkhash=md5/4K" "$md5_4k" "$SRC_DIGEST"
check "--blkhash output with --verify" "$md5_4k" "$(<"$T/stdout.txt")"
assert_same_file "$T/src.img" "$T/dst3.img" "--blkhash --verify"

msg "file -> NBD memory, -v; the destination is read back"
start_nbdkit mem --filter=log memory size="$size" logfile="$T/mem-requests.txt"
run_v -v --verify "$T/src.img" "$(uri_for mem)"
verify_digests sha256
check "-v digest, NBD memory" "$sha256_64k" "$SRC_DIGEST"
# The copy itself only writes; holes may be skipped with block status, but
# the data (at least 393293 random bytes per MiB) must be read back: summed
# before our own read-back below, which the same log would count. (nbdkit
# logs a request as it arrives: every one nbdcopy sent is there once it
# exited. One grep, the shell sums: log_sum runs three tools.)
read_bytes=0
while read -r line; do
    read_bytes=$((read_bytes + ${line##*count=}))
done < <(grep -oE 'connection=[0-9]+ Read id=[0-9]+ offset=0x[0-9a-fA-F]+ count=0x[0-9a-fA-F]+' \
    "$T/mem-requests.txt")
((read_bytes >= 6 * 393293)) ||
    fail "--verify read only $read_bytes bytes of the NBD destination back"
assert_nbd_equals_file "$(uri_for mem)" "$T/src.img" "--verify to NBD memory"
stop_server mem

msg "NBD -> NBD, -C 1 --synchronous --verify"
start_nbdkit src -r file "$T/src.img"
start_nbdkit mem2 memory size="$size"
run_copy --synchronous -C 1 --verify "$(uri_for src)" "$(uri_for mem2)"
assert_nbd_equals_file "$(uri_for mem2)" "$T/src.img" "--synchronous --verify"
stop_server mem2

msg "NBD -> NBD with --request-size=4K -R 1 --blkhash=sha256/1M --verify"
start_nbdkit mem3 memory size="$size"
run_copy --request-size=4K -R 1 --blkhash=sha256/1M --verify \
    "$(uri_for src)" "$(uri_for mem3)" >/dev/null
assert_nbd_equals_file "$(uri_for mem3)" "$T/src.img" "--request-size=4K --verify"
stop_server mem3

if command -v qemu-img >/dev/null && command -v qemu-nbd >/dev/null; then
    msg "file -> [ qemu-nbd -f qcow2 ] --verify -v"
    qemu-img create -q -f qcow2 "$T/dst.qcow2" "$size"
    run_v -v --verify -- "$T/src.img" [ qemu-nbd -f qcow2 "$T/dst.qcow2" ]
    verify_digests sha256
    check "-v digest, qcow2" "$sha256_64k" "$SRC_DIGEST"
    qcow2_to_file "$T/dst.qcow2" "$T/back.img"
    assert_same_file "$T/src.img" "$T/back.img" "--verify to qcow2"

    msg "NBD -> qemu-nbd qcow2 socket pre-filled with junk, --verify"
    make_random_file "$T/junk.img" "$size"
    qemu-img convert -q -f raw -O qcow2 "$T/junk.img" "$T/dst2.qcow2"
    start_qemu_nbd q -f qcow2 "$T/dst2.qcow2"
    run_copy --verify "$(uri_for src)" "$(uri_for q)"
    stop_server q
    qcow2_to_file "$T/dst2.qcow2" "$T/back2.img"
    assert_same_file "$T/src.img" "$T/back2.img" "--verify to pre-filled qcow2"
else
    msg "qemu-img/qemu-nbd missing: qcow2 part skipped"
fi
stop_server src

msg "file -> larger NBD destination (random tail left alone), -v"
big=$((size + 3 * MiB + 4096))
make_random_file "$T/big.img" "$big"
cp "$T/big.img" "$T/big.orig"
start_nbdkit big file "$T/big.img"
run_v -v --verify "$T/src.img" "$(uri_for big)"
stop_server big
verify_digests sha256
check "-v digest, larger destination" "$sha256_64k" "$SRC_DIGEST"
cmp -s -n "$size" "$T/src.img" "$T/big.img" || fail "larger destination: copied bytes differ"
cmp -s -i "$size:$size" "$T/big.orig" "$T/big.img" ||
    fail "larger destination: tail beyond the source size was modified"

msg "file -> larger file, --blkhash=sha512 --verify"
make_random_file "$T/big2.img" "$big"
run_copy --blkhash=sha512 --verify "$T/src.img" "$T/big2.img" >/dev/null
cmp -s -n "$size" "$T/src.img" "$T/big2.img" || fail "larger file: copied bytes differ"

msg "stdin (pipe) -> file, --verify -v"
run_v -v --verify - "$T/dst4.img" < <(cat "$T/src.img")
verify_digests sha256
check "-v digest, stdin" "$sha256_64k" "$SRC_DIGEST"
assert_same_file "$T/src.img" "$T/dst4.img" "--verify from stdin"

msg "empty source -> file, --verify"
: >"$T/empty.img"
run_v -v --verify "$T/empty.img" "$T/dst5.img"
verify_digests sha256
check "-v digest, empty source" \
    af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc "$SRC_DIGEST"
msg PASS
