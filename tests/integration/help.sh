#!/usr/bin/env bash
# --help exits 0, prints usage on stdout mentioning every long option
# (including --blkhash, which virt-v2v greps for) and the null: destination.
source "$(dirname "$0")/lib.sh"

"$NBDCOPY" --help >"$T/help.txt" 2>"$T/err.txt" || fail "--help exited non-zero"
[[ -s $T/help.txt ]] || fail "--help printed nothing on stdout"
for opt in --allocated --blkhash --blkhash-file --connections \
           --destination-is-zero --flush --no-extents --progress \
           --queue-size --request-size --requests --sparse --synchronous \
           --target-is-zero --threads --verbose --version --help; do
    grep -qE -- "$opt([^a-z-]|\$)" "$T/help.txt" || fail "--help does not mention $opt"
done
grep -q 'null:' "$T/help.txt" || fail "--help does not mention null:"
# The way virt-v2v probes for the feature:
"$NBDCOPY" --help | grep -q -- --blkhash || fail "'nbdcopy --help | grep -- --blkhash' fails"
msg PASS
