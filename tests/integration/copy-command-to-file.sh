#!/usr/bin/env bash
# [ CMD ARGS ] source (systemd socket activation) to a file: byte-identical,
# with nbdkit file, nbdkit data and qemu-nbd raw as the command.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-nbd

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "[ nbdkit file ] -> file"
run_copy -- [ nbdkit -r file "$T/src.img" ] "$T/out1.img"
assert_same_file "$T/src.img" "$T/out1.img" "[ nbdkit file ] source"

msg "[ nbdkit data ] -> file"
printf 'hello, world' >"$T/hello.txt"
truncate -s 2M "$T/hello.txt"
run_copy -- [ nbdkit data '"hello, world"' size=2M ] "$T/out2.img"
assert_same_file "$T/hello.txt" "$T/out2.img" "[ nbdkit data ] source"

msg "[ qemu-nbd -f raw ] -> file (512-aligned size)"
make_test_file "$T/src3.img" $((3 * MiB + 1536))
run_copy -- [ qemu-nbd -r -f raw "$T/src3.img" ] "$T/out3.img"
assert_same_file "$T/src3.img" "$T/out3.img" "[ qemu-nbd ] source"
msg PASS
