#!/usr/bin/env bash
# --checksum prints what sha256sum (md5sum, sha1sum, sha512sum) prints for
# the same bytes, "HEX  NAME", while the copy runs: for every algorithm and
# name case, on an image of an odd size (not a multiple of 512) with data,
# holes, allocated zeroes, zero extents an NBD server reports, and data
# that ends in zeroes; from every kind of source (file, NBD URI, a qcow2
# behind [ qemu-nbd ], stdin from a file and from a pipe, a loop device)
# to every kind of destination (file, NBD, null:, stdout with
# --checksum-file), in both engines (parallel, --synchronous) and with
# several connection and request settings. Every copy is compared with
# cmp; the printed line is what `sha256sum -c` accepts.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit sha256sum md5sum sha1sum sha512sum cmp

# line_of NAME OUT: the one line of file OUT, which must be "HEX  NAME".
# Sets DIGEST to HEX.
line_of() {
    local name=$1 out=$2 line=
    [[ $(wc -l <"$out") -eq 1 ]] || fail "expected one line on stdout, got: $(cat "$out")"
    IFS= read -r line <"$out"
    [[ $line =~ ^([0-9a-f]+)\ \ (.*)$ ]] || fail "not a 'HEX  NAME' line: '$line'"
    [[ ${BASH_REMATCH[2]} == "$name" ]] || fail "line names '${BASH_REMATCH[2]}', not '$name'"
    DIGEST=${BASH_REMATCH[1]}
}

# check WHAT EXPECTED-HEX NAME ARGS...: nbdcopy ARGS exits 0 and prints
# exactly "EXPECTED-HEX  NAME".
check() {
    local what=$1 expected=$2 name=$3 rc=0
    shift 3
    "$NBDCOPY" "$@" >"$T/sum.out" 2>"$T/sum.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "$what: nbdcopy $* exited $rc: $(cat "$T/sum.err")"
    line_of "$name" "$T/sum.out"
    [[ $DIGEST == "$expected" ]] || fail "$what: got $DIGEST, expected $expected"
}

# The image: make_test_file's data, holes and allocated zeroes, an odd
# size, and its last 70000 bytes zeroes (data that ends in zeroes).
size=$((9 * MiB + 3333))
make_test_file "$T/src.img" "$size"
write_zeroes "$T/src.img" $((size - 70000)) 70000
declare -A want
for algorithm in md5 sha1 sha256 sha512; do
    want[$algorithm]=$("${algorithm}sum" <"$T/src.img" | cut -d' ' -f1)
done

# ---------------------------------------------------------------------------
msg "file -> file, every algorithm, any case; sha256sum -c checks the copy"
for algorithm in md5 sha1 sha256 sha512 SHA256 Sha512; do
    lower=${algorithm,,}
    rm -f "$T/dst.img"
    check "file $algorithm" "${want[$lower]}" "$T/dst.img" \
        --checksum="$algorithm" "$T/src.img" "$T/dst.img"
    cmp "$T/src.img" "$T/dst.img" || fail "file copy ($algorithm) differs"
done
check "bare --checksum is sha256" "${want[sha256]}" "$T/dst.img" --checksum "$T/src.img" "$T/dst.img"
(cd "$T" && sha256sum -c --status sum.out) || fail "sha256sum -c rejects our line: $(cat "$T/sum.out")"
check "--synchronous" "${want[sha256]}" "$T/dst.img" --synchronous --checksum "$T/src.img" "$T/dst.img"
cmp "$T/src.img" "$T/dst.img" || fail "--synchronous copy differs"

msg "file -> null: names the source"
check "null:" "${want[sha512]}" "$T/src.img" --checksum=sha512 "$T/src.img" null:
check "null: --synchronous" "${want[md5]}" "$T/src.img" --checksum=md5 --synchronous "$T/src.img" null:

msg "--blkhash and --checksum together: both lines, upstream's blkhash line first"
"$NBDCOPY" --checksum --blkhash "$T/src.img" null: >"$T/both.out" || fail "--blkhash --checksum failed"
mapfile -t both <"$T/both.out"
blk=$(python3 -S "$TEST_LIB/blkhash_reference.py" "$T/src.img") || fail "blkhash reference failed"
[[ ${#both[@]} -eq 2 && ${both[0]} == "$blk" && ${both[1]} == "${want[sha256]}  $T/src.img" ]] ||
    fail "--blkhash --checksum printed '${both[*]}', expected '$blk' then '${want[sha256]}  $T/src.img'"

msg "a name sha256sum escapes"
odd=$T/'back\slash'
cp "$T/src.img" "$odd"
"$NBDCOPY" --checksum "$odd" null: >"$T/odd.out"
expected_line=$(sha256sum "$odd")
[[ $(<"$T/odd.out") == "$expected_line" ]] ||
    fail "escaped name: got '$(<"$T/odd.out")', sha256sum prints '$expected_line'"

msg "stdin (a redirected file, a pipe) -> file and -> null:; file -> stdout"
rm -f "$T/dst.img"
check "stdin file" "${want[sha1]}" "$T/dst.img" --checksum=sha1 - "$T/dst.img" <"$T/src.img"
cmp "$T/src.img" "$T/dst.img" || fail "stdin copy differs"
check "stdin pipe" "${want[sha256]}" - --checksum - null: < <(cat "$T/src.img")
# A pipe in chunks of odd sizes.
check "stdin pipe, dribbled" "${want[sha512]}" - --checksum=sha512 - null: < <(
    dd if="$T/src.img" bs=777777 status=none | {
        for ((i = 0; i <= size / 333333; i++)); do
            dd bs=333333 count=1 iflag=fullblock status=none
        done
    })
"$NBDCOPY" --checksum=md5 --checksum-file="$T/sum.txt" "$T/src.img" - >"$T/piped.img" ||
    fail "file -> stdout failed"
cmp "$T/src.img" "$T/piped.img" || fail "stdout copy differs"
line_of "$T/src.img" "$T/sum.txt"
[[ $DIGEST == "${want[md5]}" ]] || fail "--checksum-file: got $DIGEST, expected ${want[md5]}"

# ---------------------------------------------------------------------------
msg "NBD: nbdkit file (zero extents), and an option grid"
start_nbdkit src -r file "$T/src.img"
uri=$(uri_for src)
for args in "" "-C 1" "-C 2 -R 1" "-C 4 -R 4 --request-size=64K" "--request-size=4K" \
            "--no-extents" "--sparse=0" "--synchronous" "--synchronous --no-extents"; do
    # shellcheck disable=SC2086
    check "nbd $args" "${want[sha256]}" "$uri" --checksum $args "$uri" null:
done
rm -f "$T/dst.img"
check "nbd -> file" "${want[sha1]}" "$T/dst.img" --checksum=sha1 "$uri" "$T/dst.img"
cmp "$T/src.img" "$T/dst.img" || fail "nbd -> file copy differs"

msg "file -> NBD (nbdkit memory), and NBD -> NBD"
start_nbdkit dst memory size="$size"
check "file -> nbd" "${want[sha512]}" "$T/src.img" --checksum=sha512 "$T/src.img" "$(uri_for dst)"
assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "file -> nbd copy"
start_nbdkit dst2 memory size="$size"
check "nbd -> nbd" "${want[md5]}" "$uri" --checksum=md5 "$uri" "$(uri_for dst2)"
assert_nbd_equals_file "$(uri_for dst2)" "$T/src.img" "nbd -> nbd copy"
stop_server src

if command -v qemu-img >/dev/null && command -v qemu-nbd >/dev/null; then
    msg "[ qemu-nbd -f qcow2 ] -> file and -> [ qemu-nbd ] qcow2"
    # qcow2 sizes are whole sectors: the disk is the image padded with zeroes.
    cp "$T/src.img" "$T/padded.img"
    truncate -s $(((size + 511) / 512 * 512)) "$T/padded.img"
    padded=$(sha256sum <"$T/padded.img" | cut -d' ' -f1)
    qemu-img convert -q -f raw -O qcow2 "$T/src.img" "$T/src.qcow2"
    rm -f "$T/dst.img"
    check "qcow2 source" "$padded" "$T/dst.img" \
        --checksum -- [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] "$T/dst.img"
    cmp "$T/padded.img" "$T/dst.img" || fail "qcow2 -> file copy differs"
    qemu-img create -q -f qcow2 "$T/dst.qcow2" "$size"
    check "qcow2 destination" "$padded" "$T/padded.img" \
        --checksum -- "$T/padded.img" [ qemu-nbd -f qcow2 "$T/dst.qcow2" ]
    qemu-img compare -q -f raw -F qcow2 "$T/padded.img" "$T/dst.qcow2" ||
        fail "file -> qcow2 copy differs"
else
    msg "qemu-img/qemu-nbd missing: qcow2 part skipped"
fi

# ---------------------------------------------------------------------------
if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null &&
   [[ -e /dev/loop-control ]] && losetup -f >/dev/null 2>&1; then
    msg "loop devices: a source, and a destination (named by the source)"
    # A device is whole sectors: the padded image (made above, or here).
    cp "$T/src.img" "$T/padded.img"
    truncate -s $(((size + 511) / 512 * 512)) "$T/padded.img"
    attach_loop "$T/padded.img" -r
    src_dev=$LOOPDEV
    check "block source" "$(sha256sum <"$T/padded.img" | cut -d' ' -f1)" "$src_dev" \
        --checksum "$src_dev" null:
    truncate -s $((10 * MiB)) "$T/disk.img"
    attach_loop "$T/disk.img"
    check "block destination" "${want[sha1]}" "$T/src.img" --checksum=sha1 "$T/src.img" "$LOOPDEV"
    cmp -n "$size" "$T/src.img" "$LOOPDEV" || fail "file -> block copy differs"
    detach_loop "$LOOPDEV"
    detach_loop "$src_dev"
else
    msg "no loop devices (needs root): block device part skipped"
fi
msg PASS
