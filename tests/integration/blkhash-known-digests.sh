#!/usr/bin/env bash
# --blkhash reproduces every digest of the reference table
# (/work/shared/reference/blkhash.md): sha256/64K (bare --blkhash), md5,
# md5 with 4-byte blocks and sha512, from nbdkit sources (data, null) and
# from files (with holes and with allocated zeroes).  Each digest is printed
# as exactly one lowercase hex line on stdout.  The Python reference must
# agree with the table on the same files, so the table, the reference and
# the binary check each other.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3
REF=$TEST_LIB/blkhash_reference.py

# hash_of ARGS...: run "nbdcopy ARGS" (which must end with "null:" or a
# destination), require exit 0 and stdout == exactly one lowercase hex line
# of the right length for the algorithm; the hex is left in HASH.  (Not
# printed for a $(...): a subshell per digest costs more than the digest.)
hash_of() {
    local rc=0 want_len=64 a
    for a in "$@"; do
        case $a in
            --blkhash=md5*) want_len=32 ;;
            --blkhash=sha1*) want_len=40 ;;
            --blkhash=sha512*) want_len=128 ;;
        esac
    done
    "$NBDCOPY" "$@" >"$T/hash.out" 2>"$T/hash.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "nbdcopy $* exited $rc: $(<"$T/hash.err")"
    # Exactly "<hex>\n": one line, no file name, nothing else.
    local out=
    IFS= read -r -d '' out <"$T/hash.out" || true
    HASH=${out%$'\n'}
    [[ $out == "$HASH"$'\n' && $HASH =~ ^[0-9a-f]+$ && ${#HASH} -eq $want_len ]] ||
        fail "nbdcopy $*: stdout is not one $want_len-digit lowercase hex line: '$out'"
}

check() { # WHAT EXPECTED ACTUAL
    [[ $3 == "$2" ]] || fail "$1: got $3, expected $2"
}

# nbd_digest NAME EXPECTED BLKHASH-OPT [EXPECTED BLKHASH-OPT]... --
# NBDKIT-ARGS...: serve NBDKIT-ARGS (read-only) and check the digest of the
# export with each BLKHASH-OPT (one server for them all: the same export).
nbd_digest() {
    local name=$1 pairs=() i uri
    shift
    while [[ $1 != -- ]]; do pairs+=("$1" "$2"); shift 2; done
    shift
    start_nbdkit "$name" -r "$@"
    uri=$(uri_for "$name")
    for ((i = 0; i < ${#pairs[@]}; i += 2)); do
        hash_of "${pairs[i + 1]}" "$uri" null:
        check "$name (${pairs[i + 1]}, nbdkit $*)" "${pairs[i]}" "$HASH"
    done
    stop_server "$name"
}

# file_digest PATH EXPECTED [ALGO [BLOCK-SIZE [BLKHASH-OPT]]]: the binary
# on a file now; the Python reference on the same file is queued for
# check_reference (one python3 start for all of them: it is slow here).
REF_QUEUE=()
file_digest() {
    local path=$1 want=$2 algo=${3:-sha256} bs=${4:-65536} opt=${5:---blkhash}
    REF_QUEUE+=("$path $algo $bs $want")
    hash_of "$opt" "$path" null:
    check "${path##*/} ($opt)" "$want" "$HASH"
}

check_reference() {
    local out
    out=$(printf '%s\n' "${REF_QUEUE[@]}" | python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from blkhash_reference import blkhash
for line in sys.stdin:
    path, algo, bs, want = line.split()
    got = blkhash(path, algo, int(bs))
    if got != want:
        print("python reference %s/%s on %s: got %s, expected %s"
              % (algo, bs, path, got, want))
' "$(dirname "$REF")") || fail "python reference failed"
    [[ -z $out ]] || fail "$out"
    msg "python reference agrees on ${#REF_QUEUE[@]} files"
}

# fill_file PATH COUNT CHAR: append COUNT copies of CHAR (built by
# doubling in bash: no process).
fill_file() {
    local s=$3
    while ((${#s} < $2)); do s+=$s; done
    printf '%s' "${s:0:$2}" >>"$1"
}
# zero_file PATH COUNT: append COUNT allocated zero bytes.
zero_file() { head -c "$2" /dev/zero >>"$1"; }

# ---------------------------------------------------------------------------
D_EMPTY=af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc
D_A64K=2e3a5f57d5e726ee5de62db1a85ff816f4fa6ea4627807d9a51bdc4c883e165e
D_Z64K=8ab067ab7939a3d4f40cbb118956c07c06aeae2d075d6e0a2ebbb94bd42832af
D_A32K=9467334d6d7668a2f06898185b5cddc78cdfbd962f50c6bf250101f03a0e54dc
D_Z32K=842d185f0ff348b0d689e184bddc47f69a19032a6934c89b879479f1e86f9d56
D_Z8x64K=722ac11a3a81034edf196aa3ee68d1a2e345cd0838b0c78c2ce2fb015d4d817d
D_Z8x64K32K=e623a5702b1feb08fbb3d18e35bbb7ec10146b8cd1bcff811200a3948c78c55c
D_Z1G=c6d6562c3074a2caa0ceea3e1f460f3af678c792ed05e64157eb51e68ae5260d
D_AF=4ab1586084326f5beb911621282e9557cd26856105eff7f78cace5986af4738b
D_AE=2cad558b3a2a8d87435e80fe7bae69fa664d92eaa1b9411f573b9fbb412a4d43
D_A000E000=4b2b5acd96f8105f4fb26abaf35c7c5756338ef9ccce19ffe7714c9ad94b4398
D_A000E00=2510ac29c7103f2e68c672d728cbd43db4ed3dc809a24cde96e62dc5862a0f57
D_HELLO=337355feb53a5309d5aba92796223c2c84ffab930e706c01fef573a2722545e6
D_HELLO_MD5=f741ac9ce55f5325906bb14e9c05d467
D_HELLO_MD5_4=8262896de34125dec173722c920e8bd0
D_HELLO_SHA512=eca04a593cf12ec4132993da709048e25a2f1be3526e132fb521ec9d41f023ec4018b3fd07b014a33e36bb5fa145b36991f431e62f9e1a93bebea6c9565682c1
D_HELLO_GOODBYE=61b8f3a8cea76e16eeff7ce27f1b7711c1f1e437f5038cec17773772a4bded28
D_1234=cbb388edd25e567b85f504c7b345497f9fb4f6bbf4e39768809184b9f9e678f8
D_1234_MD5=84fc21ac2f49ac283ff399378d834d1a

# ---------------------------------------------------------------------------
msg "nbdkit sources"
nbd_digest empty "$D_EMPTY" --blkhash -- null size=0
nbd_digest a64k "$D_A64K" --blkhash -- data '"A"*65536'
nbd_digest z64k "$D_Z64K" --blkhash -- null size=65536
nbd_digest a32k "$D_A32K" --blkhash -- data '"A"*32768'
nbd_digest z32k "$D_Z32K" --blkhash -- null size=32768
nbd_digest z8x64k "$D_Z8x64K" --blkhash -- null size=$((8 * 65536))
nbd_digest z8x64k32k "$D_Z8x64K32K" --blkhash -- null size=$((8 * 65536 + 32768))
# The same zeroes as a data export: allocated pages of zeroes rather than
# a plugin that reports one big hole.
nbd_digest dz8x64k32k "$D_Z8x64K32K" --blkhash -- data '"\x00"*557056'
nbd_digest z1g "$D_Z1G" --blkhash -- null size=1G
nbd_digest af "$D_AF" --blkhash -- \
    data '"A"*32768 "B"*32768 "C"*32768 "D"*32768 "E"*32768 "F"*32768'
nbd_digest ae "$D_AE" --blkhash -- \
    data '"A"*32768 "B"*32768 "C"*32768 "D"*32768 "E"*32768'
nbd_digest a000e000 "$D_A000E000" --blkhash -- \
    data '"A"*32768 @131072 "E"*32768' size=262144
nbd_digest a000e00 "$D_A000E00" --blkhash -- \
    data '"A"*32768 @131072 "E"*32768' size=229376
nbd_digest hello \
    "$D_HELLO" --blkhash \
    "$D_HELLO" --blkhash=sha256 \
    "$D_HELLO" --blkhash=sha256/64K \
    "$D_HELLO" --blkhash=sha256/65536 \
    "$D_HELLO_MD5" --blkhash=md5 \
    "$D_HELLO_MD5_4" --blkhash=md5/4 \
    "$D_HELLO_SHA512" --blkhash=sha512 \
    -- data '"hello"'
nbd_digest hello-goodbye "$D_HELLO_GOODBYE" --blkhash -- data '"hello" @1048576 "goodbye"'
nbd_digest r1234 \
    "$D_1234" --blkhash \
    "$D_1234_MD5" --blkhash=md5 \
    "$D_1234_MD5" --blkhash=md5/64K \
    -- data '"12345678"*131072'

# ---------------------------------------------------------------------------
msg "files"
: >"$T/empty.img"
file_digest "$T/empty.img" "$D_EMPTY"

fill_file "$T/a64k.img" 65536 A
file_digest "$T/a64k.img" "$D_A64K"
fill_file "$T/a32k.img" 32768 A
file_digest "$T/a32k.img" "$D_A32K"

# zeroes, once as holes and once allocated
for n in 32768:$D_Z32K 65536:$D_Z64K 524288:$D_Z8x64K 557056:$D_Z8x64K32K; do
    size=${n%%:*} want=${n#*:}
    truncate -s "$size" "$T/hole-$size.img"
    file_digest "$T/hole-$size.img" "$want"
    zero_file "$T/zero-$size.img" "$size"
    file_digest "$T/zero-$size.img" "$want"
done
truncate -s 1G "$T/hole-1g.img"
hash_of --blkhash "$T/hole-1g.img" null:
check "1 GiB sparse file" "$D_Z1G" "$HASH"

for c in A B C D E; do fill_file "$T/ae.img" 32768 "$c"; done
file_digest "$T/ae.img" "$D_AE"
cp "$T/ae.img" "$T/af.img"
fill_file "$T/af.img" 32768 F
file_digest "$T/af.img" "$D_AF"

# A,0,0,0,E,0,0,(0): the zeroes once as holes, once allocated
fill_file "$T/a000e00-holes.img" 32768 A
truncate -s 131072 "$T/a000e00-holes.img"
fill_file "$T/a000e00-holes.img" 32768 E
truncate -s 229376 "$T/a000e00-holes.img"
file_digest "$T/a000e00-holes.img" "$D_A000E00"
cp "$T/a000e00-holes.img" "$T/a000e000-holes.img"
truncate -s 262144 "$T/a000e000-holes.img"
file_digest "$T/a000e000-holes.img" "$D_A000E000"
fill_file "$T/a000e000-zeroes.img" 32768 A
zero_file "$T/a000e000-zeroes.img" 98304
fill_file "$T/a000e000-zeroes.img" 32768 E
zero_file "$T/a000e000-zeroes.img" 98304
file_digest "$T/a000e000-zeroes.img" "$D_A000E000"

printf hello >"$T/hello.img"
file_digest "$T/hello.img" "$D_HELLO"
file_digest "$T/hello.img" "$D_HELLO_MD5" md5 65536 --blkhash=md5
file_digest "$T/hello.img" "$D_HELLO_MD5_4" md5 4 --blkhash=md5/4
file_digest "$T/hello.img" "$D_HELLO_SHA512" sha512 65536 --blkhash=sha512

printf hello >"$T/hello-goodbye.img"
truncate -s 1048576 "$T/hello-goodbye.img"
printf goodbye >>"$T/hello-goodbye.img"
file_digest "$T/hello-goodbye.img" "$D_HELLO_GOODBYE"

python3 -c 'import sys; sys.stdout.buffer.write(b"12345678" * 131072)' >"$T/r1234.img"
file_digest "$T/r1234.img" "$D_1234"
file_digest "$T/r1234.img" "$D_1234_MD5" md5 65536 --blkhash=md5

check_reference

msg "stdin"
hash_of --blkhash - null: <"$T/hello.img"
check "hello on stdin" "$D_HELLO" "$HASH"
hash_of --blkhash=md5/4 - null: < <(cat "$T/hello.img")
check "hello through a pipe, md5/4" "$D_HELLO_MD5_4" "$HASH"
hash_of --blkhash - null: < <(:)
check "empty pipe" "$D_EMPTY" "$HASH"
hash_of --blkhash - null: < <(cat "$T/r1234.img")
check "1 MiB of 12345678 through a pipe" "$D_1234" "$HASH"
msg PASS
