#!/usr/bin/env bash
# Compressed qcow2 output, the way virt-v2v's -oo compressed writes it:
# qemu's compress driver takes only whole 64K clusters (minimum block size
# 65536), so every write and zero must cover whole clusters.
#
# 16 MiB: 256 clusters, more than the default queue (14 MiB) holds, so the
# reader still waits for the compressing writer. Each result is read back
# by qemu-img into a raw file and compared with cmp: qemu-img compare
# against a compressed image costs 4x as much CPU.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-img qemu-nbd

size=$((16 * MiB))
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
nbd_to_file "$(uri_for src)" "$size" "$T/src.raw"
qcow2_to_file "$T/out.qcow2" "$T/out.raw"
assert_same_file "$T/src.raw" "$T/out.raw" "compressed qcow2"

msg "again with --synchronous and with --request-size=64K -R 2"
for o in --synchronous "--request-size=64K -R 2"; do
    rm -f "$T/out.qcow2" "$T/out.raw"
    qemu-img create -q -f qcow2 "$T/out.qcow2" "$size"
    # shellcheck disable=SC2086
    run_copy $o -- "$(uri_for src)" [ qemu-nbd --image-opts "$opts" ]
    qcow2_to_file "$T/out.qcow2" "$T/out.raw"
    assert_same_file "$T/src.raw" "$T/out.raw" "[$o]: compressed qcow2"
done
msg PASS
