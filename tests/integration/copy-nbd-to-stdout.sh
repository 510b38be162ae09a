#!/usr/bin/env bash
# NBD to stdout: redirected to a file, and piped into sha256sum (the way
# virt-v2v checksums disks).  Also file to stdout.
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit src -r file "$T/src.img"
want=$(sha256sum <"$T/src.img" | cut -d' ' -f1)

msg "nbd -> stdout redirected to a file"
run_copy "$(uri_for src)" - >"$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "nbd -> stdout file"

msg "nbd -> stdout | sha256sum"
got=$("$NBDCOPY" "$(uri_for src)" - | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "sha256 of piped output $got, expected $want"

msg "nbd -> stdout | cat > file"
"$NBDCOPY" "$(uri_for src)" - | cat >"$T/out2.img"
assert_same_file "$T/src.img" "$T/out2.img" "nbd -> stdout pipe"

msg "file -> stdout | sha256sum"
got=$("$NBDCOPY" "$T/src.img" - | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "sha256 of file piped to stdout $got, expected $want"
msg PASS
