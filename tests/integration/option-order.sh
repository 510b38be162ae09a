#!/usr/bin/env bash
# GNU-style option parsing: options after the operands work, "--" ends the
# options (needed before "[ CMD ]" and for a file named like an option),
# short options with attached values (-R8, -C1) work.
source "$(dirname "$0")/lib/lib.sh"

size=$((2 * MiB + 1234))
make_test_file "$T/src.img" "$size"

msg "options after the operands"
run_copy "$T/src.img" "$T/out1.img" --request-size=65536 -R 8 --flush
assert_same_file "$T/src.img" "$T/out1.img" "options after operands"

msg "attached short option values"
run_copy -R8 -C1 -T1 "$T/src.img" "$T/out2.img"
assert_same_file "$T/src.img" "$T/out2.img" "-R8 -C1 -T1"

msg "-- before a file whose name starts with a dash"
cp "$T/src.img" "$T/-src.img"
(cd "$T" && run_copy -- -src.img -out3.img)
assert_same_file "$T/src.img" "$T/-out3.img" "-- then dash-named files"

msg "options, then -- and a [ CMD ] source"
run_copy --request-size=65536 -- [ nbdkit -r file "$T/src.img" ] "$T/out4.img"
assert_same_file "$T/src.img" "$T/out4.img" "[ CMD ] after --"
msg PASS
