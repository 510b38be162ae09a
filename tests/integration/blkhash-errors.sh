#!/usr/bin/env bash
# Bad --blkhash / --blkhash-file usage is refused before anything is done:
# exit status exactly 1, one line on stderr starting "nbdcopy: --blkhash"
# and saying what is wrong (unknown algorithm, which size rule, needs
# --blkhash, would mix the digest into the data),
# nothing on stdout, the destination file and the --blkhash-file not
# created (and an NBD destination not written).  Control runs show that
# the valid spellings next to each bad one are accepted.
# labels: error
source "$(dirname "$0")/lib/lib.sh"

make_test_file "$T/src.img" $((MiB + 512))

# clear: no $T/dst.img nor $T/hash.txt (rm only when one is there: most
# runs here leave neither, and each rm is a process).
clear() {
    [[ ! -e $T/dst.img && ! -e $T/hash.txt ]] || rm -f "$T/dst.img" "$T/hash.txt"
}

# refused MESSAGE ARGS...: the binary with ARGS must be refused as described
# above, its line containing MESSAGE. ARGS are expected to name $T/dst.img
# and maybe $T/hash.txt.  (Its stderr is read and shown by bash, no
# process: this runs 40 times.)
refused() {
    local want=$1
    shift
    clear
    msg "expect refusal: $*"
    local rc=0 text='' lines newlines
    "$NBDCOPY" "$@" >"$T/cmd.out" 2>"$T/cmd.err" || rc=$?
    IFS= read -r -d '' text <"$T/cmd.err" || true
    ERR=${text%"${text##*[!$'\n']}"}  # as $(cat): trailing newlines cut
    mapfile -t -n 5 lines <<<"$ERR"
    [[ -z $text ]] || printf '    stderr: %s\n' "${lines[@]}" >&2
    newlines=${text//[!$'\n']/}
    [[ $rc -eq 1 ]] || fail "exit status $rc, expected 1: $*"
    [[ ${#newlines} -eq 1 ]] ||
        fail "expected one line on stderr, got ${#newlines}: $*"
    [[ $ERR == "nbdcopy: --blkhash"* ]] ||
        fail "stderr does not start with 'nbdcopy: --blkhash': $ERR"
    [[ ! -s $T/cmd.out ]] || fail "something was printed on stdout: $*"
    [[ ! -e $T/dst.img ]] || fail "destination file created: $*"
    [[ ! -e $T/hash.txt ]] || fail "--blkhash-file created: $*"
    [[ $ERR == *"$want"* ]] || fail "$*: the message lacks '$want': $ERR"
}

# accepted ARGS...: control run, must succeed.
accepted() {
    clear
    run_copy "$@" >"$T/cmd.out"
}

src=$T/src.img dst=$T/dst.img

msg "unknown algorithms"
algorithms="(expected md5, sha1, sha256 or sha512)"
for a in foo sha md4 sha384 sha3-256 SHA256 Md5 "sha256 " crc32; do
    refused "--blkhash: unknown algorithm '$a' $algorithms" --blkhash="$a" "$src" "$dst"
done
refused "--blkhash: unknown algorithm 'foo' $algorithms" --blkhash="foo/64K" "$src" "$dst"
refused "--blkhash: unknown algorithm '' $algorithms" --blkhash="/64K" "$src" "$dst"
accepted --blkhash=sha256 "$src" "$dst"
accepted --blkhash=md5/64K "$src" "$dst"

msg "bad block sizes"
# SIZE|WHAT THE MESSAGE SAYS (the size itself follows, quoted)
while IFS='|' read -r s why; do
    if [[ -z $s ]]; then
        refused "--blkhash: empty size" --blkhash="sha256/" "$src" "$dst"
    else
        refused "--blkhash: $why" --blkhash="sha256/$s" "$src" "$dst"
        [[ $ERR == *"'$s'"* ]] || fail "sha256/$s: the message does not quote the size: $ERR"
    fi
done <<'SIZES'
3000|block size must be a power of 2
65535|block size must be a power of 2
96K|block size must be a power of 2
0|block size must be a power of 2
64M|block size must be at most 32M
33M|block size must be a power of 2
1G|block size must be at most 32M
4T|block size must be at most 32M
-4K|size must not be negative
64KK|unknown size suffix 'KK'
4X|unknown size suffix 'X'
K|not a size
abc|not a size
1.5M|unknown size suffix '.5M'
|empty size
 64K|not a size
SIZES
refused "--blkhash: unknown size suffix 'K/4K' in '64K/4K'" --blkhash="sha256/64K/4K" "$src" "$dst"
refused "--blkhash: not a size: '/64K'" --blkhash="sha256//64K" "$src" "$dst"
refused "--blkhash: missing value after '='" --blkhash="" "$src" "$dst"
accepted --blkhash=sha256/32M "$src" "$dst"
accepted --blkhash=sha256/4K "$src" "$dst"
accepted --blkhash=sha256/65536 "$src" "$dst"

msg "bad size with --blkhash-file: neither file created"
refused "--blkhash: block size must be a power of 2: '3000'" \
    --blkhash=sha256/3000 --blkhash-file="$T/hash.txt" "$src" "$dst"
refused "--blkhash: unknown algorithm 'nope'" --blkhash-file="$T/hash.txt" --blkhash=nope "$src" "$dst"

msg "--blkhash-file without --blkhash"
needs="--blkhash-file: needs --blkhash"
refused "$needs" --blkhash-file="$T/hash.txt" "$src" "$dst"
refused "$needs" --blkhash-file="$T/hash.txt" "$src" null:
refused "$needs" --verify --blkhash-file="$T/hash.txt" "$src" "$dst"
accepted --blkhash --blkhash-file="$T/hash.txt" "$src" "$dst"
[[ -s $T/hash.txt ]] || fail "control run: --blkhash-file not written"

msg "--blkhash with - as destination and no --blkhash-file"
mixed="--blkhash: the digest would be mixed into the data on stdout; use --blkhash-file"
refused "$mixed" --blkhash "$src" -
refused "$mixed" --blkhash=md5/4K "$src" -
refused "$mixed" --blkhash - - < "$src"

msg "an NBD destination is not written when the option is bad"
require_cmd nbdkit
start_nbdkit dst --filter=log memory size=$((MiB + 512)) logfile="$T/dst-requests.txt"
refused "--blkhash: block size must be a power of 2: '3000'" --blkhash=sha256/3000 "$src" "$(uri_for dst)"
refused "$needs" --blkhash-file="$T/hash.txt" "$src" "$(uri_for dst)"
stop_server dst
n=$(log_count "$T/dst-requests.txt" Write)
[[ $n -eq 0 ]] || fail "$n writes reached the NBD destination"
msg PASS
