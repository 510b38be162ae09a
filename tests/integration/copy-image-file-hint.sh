#!/usr/bin/env bash
# A file source that is another disk-image format (qcow2, qcow, vmdk, the
# vmdk text descriptor, vhdx, vdi, vpc, qed: images qemu-img made) is
# copied byte for byte, exit status 0, and stderr has exactly one line, the
# hint, in its exact words, naming the format and the command that copies
# the disk inside; that command, run, gives the disk's bytes. A raw file
# gets no hint (stderr empty), nor does an image read as a stream (stdin)
# or through an NBD server. The hint never disturbs what programs parse:
# with -p off a terminal it comes before the first frame and every other
# line is a frame; --progress=FD's lines and --json on stdout are as
# without it.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img qemu-nbd nbdkit

size=$((2 * MiB + 4096))
make_test_file "$T/disk.raw" "$size"

# expect_hint IMAGE FORMAT: nbdcopy IMAGE OUT copies the bytes as they are,
# with the hint as the one line on stderr.
expect_hint() {
    local image=$1 format=$2 rc=0
    msg "$format: $image"
    "$NBDCOPY" "$image" "$T/out.img" 2>"$T/hint.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "$format: exit status $rc: $(cat "$T/hint.err")"
    assert_same_file "$image" "$T/out.img" "$format copied as a file"
    local want="nbdcopy: hint: $image is a $format image, copied byte for byte as a file; to copy the disk inside it instead: nbdcopy -- [ qemu-nbd -r -f $format $image ] $T/out.img"
    [[ $(cat "$T/hint.err") == "$want" ]] ||
        fail "$format: stderr is not the one hint line '$want': $(cat "$T/hint.err")"
}

for format in qcow2 vmdk vhdx vdi vpc qed; do
    qemu-img convert -q -f raw -O "$format" "$T/disk.raw" "$T/disk.$format"
    expect_hint "$T/disk.$format" "$format"
done
qemu-img create -q -f qcow "$T/old.qcow" 1M
expect_hint "$T/old.qcow" qcow
qemu-img create -q -f vmdk -o subformat=monolithicFlat "$T/flat.vmdk" 1M
expect_hint "$T/flat.vmdk" vmdk

msg "the hinted command copies the disk inside"
"$NBDCOPY" -- [ qemu-nbd -r -f qcow2 "$T/disk.qcow2" ] "$T/inside.img" 2>"$T/inside.err" ||
    fail "the hinted command failed: $(cat "$T/inside.err")"
assert_same_file "$T/disk.raw" "$T/inside.img" "the disk inside the qcow2"
[[ ! -s $T/inside.err ]] || fail "the hinted command printed: $(cat "$T/inside.err")"

msg "no hint for raw data, a stream or an NBD source"
run_copy "$T/disk.raw" "$T/out.img"
[[ ! -s $T/cmd.err ]] || fail "a raw file got a hint: $(cat "$T/cmd.err")"
"$NBDCOPY" - "$T/out.img" <"$T/disk.qcow2" 2>"$T/cmd.err" || fail "stdin copy failed"
assert_same_file "$T/disk.qcow2" "$T/out.img" "a qcow2 on stdin"
[[ ! -s $T/cmd.err ]] || fail "a stream got a hint: $(cat "$T/cmd.err")"
start_nbdkit img -r file "$T/disk.qcow2"
run_copy "$(uri_for img)" "$T/out.img"
[[ ! -s $T/cmd.err ]] || fail "an NBD source got a hint: $(cat "$T/cmd.err")"
stop_server img

msg "-p off a terminal: the hint first, then only frames"
"$NBDCOPY" -p "$T/disk.qcow2" "$T/out.img" 2>"$T/p.err" </dev/null || fail "-p copy failed"
assert_same_file "$T/disk.qcow2" "$T/out.img" "-p"
head -n 1 "$T/p.err" | grep -q '^nbdcopy: hint: .* is a qcow2 image, ' ||
    fail "the first stderr line is not the hint: $(head -n 2 "$T/p.err")"
tail -n +2 "$T/p.err" | grep -qvE '.+ ([0-9]+)% \[[*-]+\]' &&
    fail "a line after the hint is no progress frame: $(cat "$T/p.err")"
tail -n 1 "$T/p.err" | grep -qF '100% [****************************************]' ||
    fail "no final frame: $(tail -n 1 "$T/p.err")"

msg "--progress=3 and --json: what programs read is unchanged"
"$NBDCOPY" --progress=3 --json "$T/disk.qcow2" "$T/out.img" 3>"$T/fd3" >"$T/json" 2>"$T/cmd.err" ||
    fail "--progress=3 --json copy failed"
grep -qvE '^[0-9]+/100$' "$T/fd3" && fail "fd 3 has other lines: $(cat "$T/fd3")"
[[ $(tail -n 1 "$T/fd3") == 100/100 ]] || fail "fd 3 does not end with 100/100"
[[ $(wc -l <"$T/json") -eq 1 ]] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/json" ||
    fail "stdout is not the one JSON line: $(head -c 300 "$T/json")"
[[ $(wc -l <"$T/cmd.err") -eq 1 ]] || fail "stderr is not the one hint line: $(cat "$T/cmd.err")"
msg PASS
