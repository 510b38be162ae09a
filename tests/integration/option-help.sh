#!/usr/bin/env bash
# --help exits 0, prints usage on stdout mentioning every long option
# (including --blkhash, which virt-v2v greps for) and the null: destination;
# it fits one screen (at most 40 lines of at most 80 columns) with the
# options grouped under Copy, Performance, Checksums (with the ALGO names)
# and Output.
source "$(dirname "$0")/lib/lib.sh"

"$NBDCOPY" --help >"$T/help.txt" 2>"$T/err.txt" || fail "--help exited non-zero"
[[ -s $T/help.txt ]] || fail "--help printed nothing on stdout"
for opt in --allocated --blkhash --blkhash-file --checksum --checksum-file --connections \
           --destination-is-zero --dirty-bitmap --flush --json --no-extents --progress \
           --queue-size --request-size --requests --sparse --synchronous \
           --target-is-zero --threads --verbose --version --help; do
    grep -qE -- "$opt([^a-z-]|\$)" "$T/help.txt" || fail "--help does not mention $opt"
done
grep -q 'null:' "$T/help.txt" || fail "--help does not mention null:"
lines=$(wc -l <"$T/help.txt") width=$(wc -L <"$T/help.txt")
((lines <= 40 && width <= 80)) || fail "--help is $lines lines of up to $width columns"
for group in Copy: Performance: "Checksums (ALGO: md5, sha1, sha256 or sha512):" Output:; do
    grep -qxF "$group" "$T/help.txt" || fail "--help has no '$group' group"
done
# The way virt-v2v probes for the feature:
"$NBDCOPY" --help | grep -q -- --blkhash || fail "'nbdcopy --help | grep -- --blkhash' fails"
msg PASS
