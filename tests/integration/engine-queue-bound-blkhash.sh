#!/usr/bin/env bash
# -R and --queue-size still hold while computing a --blkhash checksum whose
# block is larger than the request size (requests are then raised to the
# block size: the -v plan line's request_size).  Counted at the source
# server (nbdkit log filter outermost, delay filter under it: each Read is
# logged when it arrives and when it is answered), and in the engine's
# statistics (-v "workers=" line): at most R reads outstanding per
# connection, at most max(--queue-size, request size) bytes.  The digest
# must also be the same as without the limits.
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3

size=$((8 * MiB))
start_nbdkit src --filter=log --filter=delay -r pattern size="$size" \
    delay-read=5ms logfile="$T/src.req"

field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -1 | cut -d= -f2; }

bound() { # BLKHASH-SPEC R QUEUE EXPECTED-REQUEST-SIZE OPTIONS...
    local spec=$1 r=$2 queue=$3 request=$4 cap; shift 4
    local mark digest stats plan out n bytes ref_digest
    # The digest with default settings.
    ref_digest=$("$NBDCOPY" --blkhash="$spec" "$(uri_for src)" null: 2>"$T/run.err") ||
        fail "--blkhash=$spec copy failed: $(cat "$T/run.err")"
    [[ -n $ref_digest ]] || fail "--blkhash=$spec printed nothing"
    set -- --blkhash="$spec" "$@"
    mark=$(wc -l <"$T/src.req")
    msg "run: nbdcopy -v $*"
    digest=$("$NBDCOPY" -v "$@" "$(uri_for src)" null: 2>"$T/run.err") ||
        { grep -v '^libnbd' "$T/run.err" >&2; fail "copy with $* failed"; }
    [[ $digest == "$ref_digest" ]] || fail "$*: digest $digest, expected $ref_digest"
    stats=$(grep '^nbdcopy: workers=' "$T/run.err") || fail "$*: no statistics line"
    plan=$(grep '^nbdcopy: connections=' "$T/run.err") || fail "$*: no plan line"
    [[ $(field "$plan" request_size) == "$request" ]] ||
        fail "$*: request size $(field "$plan" request_size), expected $request"
    cap=$((queue > request ? queue : request))
    msg "  $stats"
    tail -n +$((mark + 1)) "$T/src.req" >"$T/part.req"
    out=$(logtool maxout "$T/part.req" Read)
    n=${out% *} bytes=${out#* }
    msg "  source server: at most $n reads, $bytes bytes outstanding on one connection"
    ((n <= r)) || fail "$*: $n reads outstanding at once on one connection, -R $r"
    ((bytes <= cap)) || fail "$*: $bytes bytes of reads outstanding, bound $cap"
    (($(field "$stats" max_requests_in_flight) <= r)) || fail "$*: $stats"
    (($(field "$stats" max_bytes_in_flight) <= cap)) || fail "$*: $stats, bound $cap"
}

# 64K checksum blocks, 4K requests (raised to 64K), 2 requests per connection.
bound sha256/64K 2 $((12 * MiB)) $((64 * 1024)) --request-size=4K -R 2 --queue-size=12M
# 1M checksum blocks, 64K requests (raised to 1M), a 64K queue: one 1M read
# at a time, alone.
bound sha256/1M 64 $((64 * 1024)) $MiB --request-size=64K --queue-size=64K
# Blocks smaller than requests change nothing.
bound sha256/4K 4 $((2 * MiB)) $((256 * 1024)) --request-size=256K -R 4 --queue-size=2M
msg PASS
