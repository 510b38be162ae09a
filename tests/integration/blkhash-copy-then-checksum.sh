#!/usr/bin/env bash
# The digest printed while copying is the digest of the data copied:
#  - copying with --blkhash to a file / an NBD export prints the digest that
#    "nbdcopy --blkhash DST null:" gives afterwards and that the Python
#    reference gives on the destination bytes (read back with qemu-img for
#    NBD), and the copy is byte-identical;
#  - --blkhash-file=FILE writes exactly "<hex>\n" to FILE and nothing to
#    stdout (also when the data goes to stdout);
#  - into a larger destination the digest is the source's, not the
#    destination's;
#  - three nbdkit sparse-random images (64M, seeds 1, 2, 3), compared with
#    the Python reference on a qemu-img copy of the export.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3 qemu-img
REF=$TEST_LIB/blkhash_reference.py

# read_digest FILE ALGO: FILE must hold exactly "<hex>\n"; the hex is left
# in DIGEST.  (Results go in variables, not through a $(...): a subshell
# per digest cost more than most of these runs.)
read_digest() {
    local out='' n
    case $2 in md5) n=32 ;; sha1) n=40 ;; sha256) n=64 ;; sha512) n=128 ;; esac
    [[ -f $1 ]] || fail "$1 was not created"
    IFS= read -r -d '' out <"$1" || true
    [[ $out =~ ^[0-9a-f]{$n}$'\n'$ ]] ||
        fail "${1##*/} is not one $2 hex line: '${out:0:300}'"
    DIGEST=${out%$'\n'}
}

# run_hash ALGO ARGS...: run the binary (must succeed); the digest from its
# stdout is left in H.
run_hash() {
    local algo=$1; shift
    run_copy "$@" >"$T/stdout.txt"
    read_digest "$T/stdout.txt" "$algo"
    H=$DIGEST
}

# ref FILE ALGO BS: Python reference (slow to start here, so batch where
# possible with refs).
ref() { python3 "$REF" "$@" || fail "python reference failed on $1"; }
# refs FILE ALGO/BS...: one line per ALGO/BS.
refs() {
    local file=$1; shift
    python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from blkhash_reference import blkhash
for spec in sys.argv[3:]:
    algo, bs = spec.split("/")
    print(blkhash(sys.argv[2], algo, int(bs)))
' "$(dirname "$REF")" "$file" "$@" || fail "python reference failed on $file"
}

check() { # WHAT EXPECTED ACTUAL
    [[ $3 == "$2" ]] || fail "$1: got $3, expected $2"
}

size=$((7 * MiB + 4321))
make_test_file "$T/src.img" "$size"
mapfile -t R < <(refs "$T/src.img" sha256/65536 md5/4096 sha1/1048576 sha512/65536)
[[ ${#R[@]} -eq 4 ]] || fail "python reference failed"
sha256_64k=${R[0]} md5_4k=${R[1]} sha1_1m=${R[2]} sha512_64k=${R[3]}

# ---------------------------------------------------------------------------
msg "file -> new file with --blkhash"
run_hash sha256 --blkhash "$T/src.img" "$T/dst1.img"; h=$H
assert_same_file "$T/src.img" "$T/dst1.img" "file -> file"
check "digest while copying" "$sha256_64k" "$h"
run_hash sha256 --blkhash "$T/dst1.img" null:
check "digest of the destination afterwards" "$h" "$H"

msg "file -> stale file with --blkhash=md5/4K"
make_random_file "$T/dst2.img" 4096
run_hash md5 --blkhash=md5/4K "$T/src.img" "$T/dst2.img"; h=$H
assert_same_file "$T/src.img" "$T/dst2.img" "file -> stale file"
check "md5/4K while copying" "$md5_4k" "$h"
run_hash md5 --blkhash=md5/4K "$T/dst2.img" null:
check "md5/4K of the destination" "$h" "$H"

msg "file -> larger file: digest of the source only"
make_random_file "$T/dst3.img" $((size + 3 * MiB))
run_hash sha512 --blkhash=sha512 "$T/src.img" "$T/dst3.img"
check "sha512 into a larger file" "$sha512_64k" "$H"
cmp -s -n "$size" "$T/src.img" "$T/dst3.img" || fail "larger file: copied bytes differ"

msg "file -> NBD memory with --blkhash"
start_nbdkit mem memory size="$size"
run_hash sha256 --blkhash "$T/src.img" "$(uri_for mem)"; h=$H
check "file -> NBD digest" "$sha256_64k" "$h"
run_hash sha256 --blkhash "$(uri_for mem)" null:
check "NBD destination digest afterwards" "$h" "$H"
nbd_to_file "$(uri_for mem)" "$size" "$T/mem.img"
check "reference on the NBD destination" "$h" "$(ref "$T/mem.img")"
stop_server mem

msg "NBD -> NBD with --blkhash=sha1/1M, -C 1"
start_nbdkit src -r file "$T/src.img"
start_nbdkit mem2 memory size="$size"
run_hash sha1 --blkhash=sha1/1M -C 1 "$(uri_for src)" "$(uri_for mem2)"; h=$H
check "NBD -> NBD sha1/1M" "$sha1_1m" "$h"
run_hash sha1 --blkhash=sha1/1M "$(uri_for mem2)" null:
check "sha1/1M of the NBD destination" "$h" "$H"
stop_server mem2

# ---------------------------------------------------------------------------
msg "--blkhash-file: nothing on stdout"
run_copy --blkhash --blkhash-file="$T/h1.txt" "$(uri_for src)" "$T/dst4.img" >"$T/stdout.txt"
[[ ! -s $T/stdout.txt ]] || fail "--blkhash-file: stdout not empty: $(head -c 200 "$T/stdout.txt")"
read_digest "$T/h1.txt" sha256
check "--blkhash-file digest" "$sha256_64k" "$DIGEST"
assert_same_file "$T/src.img" "$T/dst4.img" "copy with --blkhash-file"

msg "--blkhash-file overwrites an existing file"
head -c 100000 /dev/urandom >"$T/h2.txt"
run_copy --blkhash=md5/4K --blkhash-file="$T/h2.txt" "$T/src.img" null: >"$T/stdout.txt"
[[ ! -s $T/stdout.txt ]] || fail "--blkhash-file to null: stdout not empty"
read_digest "$T/h2.txt" md5
check "--blkhash-file overwriting" "$md5_4k" "$DIGEST"

msg "--blkhash-file with the data on stdout"
run_copy --blkhash=sha1/1M --blkhash-file="$T/h3.txt" "$(uri_for src)" - >"$T/dst5.img"
assert_same_file "$T/src.img" "$T/dst5.img" "NBD -> stdout with --blkhash-file"
read_digest "$T/h3.txt" sha1
check "--blkhash-file with data on stdout" "$sha1_1m" "$DIGEST"
stop_server src

msg "stdin -> file with --blkhash"
run_hash sha256 --blkhash - "$T/dst6.img" < <(cat "$T/src.img")
check "stdin -> file" "$sha256_64k" "$H"
assert_same_file "$T/src.img" "$T/dst6.img" "stdin -> file"

# ---------------------------------------------------------------------------
for seed in 1 2 3; do
    msg "nbdkit sparse-random seed=$seed"
    start_nbdkit sr sparse-random size=64M seed="$seed" percent=25
    nbd_to_file "$(uri_for sr)" $((64 * MiB)) "$T/sr.img"
    case $seed in
        1) algo=sha256 bs=65536 opt=--blkhash ;;
        2) algo=md5 bs=1048576 opt=--blkhash=md5/1M ;;
        3) algo=sha256 bs=4096 opt=--blkhash=sha256/4K ;;
    esac
    want=$(ref "$T/sr.img" "$algo" "$bs")
    rm -f "$T/sr-copy.img"
    run_hash "$algo" "$opt" "$(uri_for sr)" "$T/sr-copy.img"
    check "sparse-random seed=$seed $opt while copying" "$want" "$H"
    assert_same_file "$T/sr.img" "$T/sr-copy.img" "sparse-random seed=$seed"
    run_hash "$algo" "$opt" "$T/sr-copy.img" null:
    check "sparse-random seed=$seed $opt of the copy" "$want" "$H"
    run_hash "$algo" "$opt" "$(uri_for sr)" null:
    check "sparse-random seed=$seed $opt, export to null:" "$want" "$H"
    stop_server sr
    rm -f "$T/sr.img" "$T/sr-copy.img"
done
msg PASS
