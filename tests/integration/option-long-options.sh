#!/usr/bin/env bash
# --long-options prints exactly the long options, one per line, in this
# order (bash completion relies on it), exit 0.
# (nbdcopy 1.14.2 lacks --blkhash and --blkhash-file: it fails.)
source "$(dirname "$0")/lib/lib.sh"

cat >"$T/want.txt" <<'LIST'
--help
--allocated
--blkhash
--blkhash-file
--checkpoint
--checksum
--checksum-file
--connections
--destination-is-zero
--dirty-bitmap
--flush
--json
--no-extents
--progress
--queue-size
--ranges
--ranges-type
--rate
--request-size
--requests
--retry
--salvage
--sparse
--synchronous
--target-is-zero
--threads
--timeout
--verbose
--verify
--version
LIST
"$NBDCOPY" --long-options >"$T/got.txt" 2>"$T/err.txt" || fail "--long-options exited non-zero"
[[ ! -s $T/err.txt ]] || fail "--long-options wrote to stderr: $(cat "$T/err.txt")"
diff -u "$T/want.txt" "$T/got.txt" || fail "--long-options output differs (see diff)"
msg PASS
