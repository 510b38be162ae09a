#!/usr/bin/env bash
# An unknown option that belongs to a "[ CMD ARGS ]" written without "--"
# (nbdcopy SRC [ qemu-nbd -f qcow2 out.qcow2 ]) is the usual one-line error
# followed by a hint line: the command's options need "--" before the
# operands, with the command line that works, which does work. Exit status
# 1 as for any unknown option, nothing written; an unknown option of ours
# gets no hint.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-nbd
require_cmd qemu-img

make_test_file "$T/src.img" $((2 * MiB))
qemu-img create -q -f qcow2 "$T/out.qcow2" 2M || fail "qemu-img create failed"
cp "$T/out.qcow2" "$T/empty.qcow2"

msg "run: nbdcopy src.img [ qemu-nbd -f qcow2 out.qcow2 ]"
rc=0
"$NBDCOPY" "$T/src.img" [ qemu-nbd -f qcow2 "$T/out.qcow2" ] 2>"$T/err.txt" || rc=$?
sed 's/^/    stderr: /' "$T/err.txt" >&2
[[ $rc -eq 1 ]] || fail "exit status $rc, expected 1"
want_hint="nbdcopy: options of a bracketed command need '--' before the operands: nbdcopy -- $T/src.img [ qemu-nbd -f qcow2 $T/out.qcow2 ]"
[[ $(sed -n 1p "$T/err.txt") == "nbdcopy: -f: unknown option" ]] ||
    fail "first line: $(sed -n 1p "$T/err.txt")"
[[ $(sed -n 2p "$T/err.txt") == "$want_hint" ]] || fail "hint line: $(sed -n 2p "$T/err.txt")"
[[ $(wc -l <"$T/err.txt") -eq 2 ]] || fail "expected 2 lines on stderr, got $(wc -l <"$T/err.txt")"
cmp -s "$T/out.qcow2" "$T/empty.qcow2" || fail "the destination was written despite the error"

# The command line the hint shows copies.
hinted=$(sed -n "2s/.*operands: nbdcopy //p" "$T/err.txt")
msg "run the hinted line: nbdcopy $hinted"
eval "\"\$NBDCOPY\" $hinted" 2>"$T/err2.txt" || fail "the hinted line failed: $(cat "$T/err2.txt")"
qemu-img convert -f qcow2 -O raw "$T/out.qcow2" "$T/back.img" || fail "qemu-img convert failed"
assert_same_file "$T/src.img" "$T/back.img" "the hinted command line"

# Our own unknown option, with a bracketed command about: no hint.
expect_fail "$NBDCOPY" --bogus "$T/src.img" [ qemu-nbd -f qcow2 "$T/out.qcow2" ]
[[ $ERR == "nbdcopy: --bogus: unknown option" ]] || fail "--bogus: $ERR"
msg PASS
