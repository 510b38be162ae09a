#!/usr/bin/env bash
# Bad --blkhash / --blkhash-file usage is refused before anything is done:
# exit status exactly 1, one line on stderr starting "nbdcopy: --blkhash",
# nothing on stdout, the destination file and the --blkhash-file not
# created (and an NBD destination not written).  Control runs show that
# the valid spellings next to each bad one are accepted.
# labels: error
source "$(dirname "$0")/lib/lib.sh"

make_test_file "$T/src.img" $((MiB + 512))

# refused ARGS...: the binary with ARGS must be refused as described above.
# ARGS are expected to name $T/dst.img and maybe $T/hash.txt.
refused() {
    rm -f "$T/dst.img" "$T/hash.txt"
    msg "expect refusal: $*"
    local rc=0
    "$NBDCOPY" "$@" >"$T/cmd.out" 2>"$T/cmd.err" || rc=$?
    ERR=$(cat "$T/cmd.err")
    sed 's/^/    stderr: /' "$T/cmd.err" | head -n 5 >&2
    [[ $rc -eq 1 ]] || fail "exit status $rc, expected 1: $*"
    [[ $(wc -l <"$T/cmd.err") -eq 1 ]] ||
        fail "expected one line on stderr, got $(wc -l <"$T/cmd.err"): $*"
    [[ $ERR == "nbdcopy: --blkhash"* ]] ||
        fail "stderr does not start with 'nbdcopy: --blkhash': $ERR"
    [[ ! -s $T/cmd.out ]] || fail "something was printed on stdout: $*"
    [[ ! -e $T/dst.img ]] || fail "destination file created: $*"
    [[ ! -e $T/hash.txt ]] || fail "--blkhash-file created: $*"
}

# accepted ARGS...: control run, must succeed.
accepted() {
    rm -f "$T/dst.img" "$T/hash.txt"
    run_copy "$@" >"$T/cmd.out"
}

src=$T/src.img dst=$T/dst.img

msg "unknown algorithms"
for a in foo sha md4 sha384 sha3-256 SHA256 Md5 "sha256 " crc32; do
    refused --blkhash="$a" "$src" "$dst"
    assert_err_contains algorithm
done
refused --blkhash="foo/64K" "$src" "$dst"
refused --blkhash="/64K" "$src" "$dst"
accepted --blkhash=sha256 "$src" "$dst"
accepted --blkhash=md5/64K "$src" "$dst"

msg "bad block sizes"
for s in 3000 65535 96K 0 64M 33M 1G 4T -4K 64KK 4X K abc 1.5M "" " 64K"; do
    refused --blkhash="sha256/$s" "$src" "$dst"
done
refused --blkhash="sha256/64K/4K" "$src" "$dst"
refused --blkhash="sha256//64K" "$src" "$dst"
refused --blkhash="" "$src" "$dst"
accepted --blkhash=sha256/32M "$src" "$dst"
accepted --blkhash=sha256/4K "$src" "$dst"
accepted --blkhash=sha256/65536 "$src" "$dst"

msg "bad size with --blkhash-file: neither file created"
refused --blkhash=sha256/3000 --blkhash-file="$T/hash.txt" "$src" "$dst"
refused --blkhash-file="$T/hash.txt" --blkhash=nope "$src" "$dst"

msg "--blkhash-file without --blkhash"
refused --blkhash-file="$T/hash.txt" "$src" "$dst"
assert_err_contains --blkhash-file
refused --blkhash-file="$T/hash.txt" "$src" null:
refused --verify --blkhash-file="$T/hash.txt" "$src" "$dst"
accepted --blkhash --blkhash-file="$T/hash.txt" "$src" "$dst"
[[ -s $T/hash.txt ]] || fail "control run: --blkhash-file not written"

msg "--blkhash with - as destination and no --blkhash-file"
refused --blkhash "$src" -
refused --blkhash=md5/4K "$src" -
refused --blkhash - - < "$src"
assert_err_contains --blkhash-file

msg "an NBD destination is not written when the option is bad"
require_cmd nbdkit
start_nbdkit dst --filter=log memory size=$((MiB + 512)) logfile="$T/dst-requests.txt"
refused --blkhash=sha256/3000 "$src" "$(uri_for dst)"
refused --blkhash-file="$T/hash.txt" "$src" "$(uri_for dst)"
stop_server dst
n=$(log_count "$T/dst-requests.txt" Write)
[[ $n -eq 0 ]] || fail "$n writes reached the NBD destination"
msg PASS
