#!/usr/bin/env bash
# Compressed qcow2 output, the way virt-v2v's -oo compressed writes it:
# qemu's compress driver takes only whole 64K clusters (minimum block size
# 65536), so every write and zero must cover whole clusters.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-img qemu-nbd

size=$((32 * MiB))
src=(nbdkit -r sparse-random seed=5 size=$size percent=30 runlength=3000)
qemu-img create -q -f qcow2 "$T/out.qcow2" "$size"
opts="driver=compress,file.driver=qcow2,file.file.driver=file,file.file.filename=$T/out.qcow2"
run_copy -v -- [ "${src[@]}" ] [ qemu-nbd --image-opts "$opts" ]
grep -q "dst: size=$size (.*), preferred block size=[0-9]* block_min=65536" "$T/cmd.err" ||
    fail "the destination's minimum block size was not seen: $(grep dst: "$T/cmd.err")"

qemu-img check "$T/out.qcow2" >"$T/check.txt" || fail "qemu-img check: $(cat "$T/check.txt")"
grep -Eq '[1-9][0-9.]*% compressed clusters' "$T/check.txt" ||
    fail "no compressed clusters: $(cat "$T/check.txt")"
start_nbdkit src "${src[@]:1}"
qemu-img compare -q -f raw "$(uri_for src)" -F qcow2 "$T/out.qcow2" ||
    fail "compressed qcow2 differs from the source"

msg "again with --synchronous and with --request-size=64K -R 2"
for o in --synchronous "--request-size=64K -R 2"; do
    rm -f "$T/out.qcow2"
    qemu-img create -q -f qcow2 "$T/out.qcow2" "$size"
    # shellcheck disable=SC2086
    run_copy $o -- "$(uri_for src)" [ qemu-nbd --image-opts "$opts" ]
    qemu-img compare -q -f raw "$(uri_for src)" -F qcow2 "$T/out.qcow2" ||
        fail "[$o]: compressed qcow2 differs from the source"
done
msg PASS
