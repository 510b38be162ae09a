#!/usr/bin/env bash
# "[ CMD ARGS ... ]" runs CMD with exactly those words, no shell between:
# a file name full of shell syntax (spaces, ;, $( ), backquotes, a glob,
# quotes) reaches nbdkit as one argument, and nothing in it runs. The
# destination then matches the file, and the marker that the embedded
# commands would create does not exist.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

# Relative names: a shell, had one run, would make the markers here.
cd "$T"
name="a b; touch pwned1 \$(touch pwned2) \`touch pwned3\` * 'q\" | true &.img"
make_test_file "$name" $((MiB + 4321))

run_copy -- '[' nbdkit -r file "file=$name" ']' "$T/out.img"
assert_same_file "$name" "$T/out.img" "copy from [ nbdkit file NAME-WITH-SHELL-SYNTAX ]"
for marker in pwned1 pwned2 pwned3; do
    [[ ! -e $marker ]] || fail "a shell ran part of the command: $marker exists"
done
msg PASS
