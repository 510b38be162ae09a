#!/usr/bin/env bash
# I/O errors anywhere fail the copy, with one connection or four:
#  - read, write and zero errors injected at random by nbdkit's error
#    filter (EIO) at several rates, each setting run more than once since
#    the filter picks at random (every copy issues hundreds of requests of
#    the failing kind, so each run meets errors; one server per setting
#    serves all its runs);
#  - flush errors (nbdkit 1.32's error filter cannot fail flushes: an
#    nbdkit eval server over a file whose flush fails on its K-th call, for
#    every K up to the number of flushes a good --flush copy sends);
# Every such run must exit with status 1 (never 0, never a signal), print
# exactly one line on stderr, "nbdcopy: ...", naming the operation (read /
# write / zero / flush), the offset for reads, writes and zeroes, and
# "Input/output error".
# Extents errors are different: block status is only advice, so a copy
# whose extents requests fail (always, or half the time) must succeed, by
# reading instead, and be identical to the source (always failing on 32M;
# failing at random 50% on 2.25G, several extents windows, run twice).
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img flock

size=$((16 * MiB))
src_uri=$(uri_for src) dst_uri=$(uri_for dst)

# expect_io_error OPERATION OFFSET? CMD...: the copy fails as it should.
# (Bash tests, not greps: it runs some thirty times.)
expect_io_error() {
    local op=$1 want_offset=$2; shift 2
    local rc=0 raw='' err lower newlines
    msg "expect $op failure: ${*:2}"
    "$@" >"$T/out.txt" 2>"$T/err.txt" || rc=$?
    IFS= read -r -d '' raw <"$T/err.txt" || true
    err=$(<"$T/err.txt")
    lower=${err,,}
    newlines=${raw//[!$'\n']/}
    [[ $rc -ne 0 ]] || fail "exited 0 although ${op}s failed: $*"
    [[ $rc -eq 1 ]] || fail "exit status $rc (want 1) when ${op}s fail: $*; stderr: $err"
    [[ ${#newlines} -eq 1 ]] ||
        fail "expected one line on stderr when ${op}s fail, got: $err"
    [[ $err == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $err"
    [[ $lower == *"input/output error"* ]] || fail "no 'Input/output error' in: $err"
    # (as grep -iw: OPERATION as a whole word)
    [[ $lower =~ (^|[^[:alnum:]_])$op([^[:alnum:]_]|$) ]] ||
        fail "the message does not name the $op: $err"
    if [[ $want_offset == offset ]]; then
        [[ $lower == *offset* ]] || fail "the message gives no offset: $err"
    fi
    msg "  ok: $err"
}

# A server is started once per error setting and serves every run of that
# setting: the error filter keeps nothing between requests but its random
# numbers, and nothing reads a destination back here (an NBD destination's
# old contents change nothing in the copy).

# ---------------------------------------------------------------------------
msg "read errors"
start_nbdkit dst memory size="$size"
for rate in 0.05 0.3 1; do
    start_nbdkit src --filter=error -r pattern size="$size" \
        error-pread-rate="$rate" error=EIO
    for conns in 1 4; do
        for round in 1 2; do
            [[ $rate == 1 && $round == 2 ]] && continue
            expect_io_error read offset "$NBDCOPY" -C "$conns" -T "$conns" \
                --request-size=64K "$src_uri" "$dst_uri"
        done
    done
    if [[ $rate == 0.05 ]]; then
        # To a file and to null: too.
        expect_io_error read offset "$NBDCOPY" -C 4 -T 4 --request-size=64K \
            "$src_uri" "$T/out.img"
        expect_io_error read offset "$NBDCOPY" --request-size=64K "$src_uri" null:
    fi
    stop_server src
done
stop_server dst

# ---------------------------------------------------------------------------
msg "write errors"
make_random_file "$T/src.img" "$size"
for rate in 0.05 0.3; do
    start_nbdkit dst --filter=error memory size="$size" \
        error-pwrite-rate="$rate" error=EIO
    for conns in 1 4; do
        for round in 1 2; do
            expect_io_error write offset "$NBDCOPY" -C "$conns" -T "$conns" \
                --request-size=64K "$T/src.img" "$dst_uri"
        done
    done
    stop_server dst
done

# ---------------------------------------------------------------------------
msg "zero errors"
# 4K of data in every 64K: the holes between are zero requests (from the
# extents and from zero detection), a few hundred of them.
start_nbdkit holes -r data '( "x" * 4096 @+61440 ) * 256' size="$size"
holes_uri=$(uri_for holes)
for rate in 0.05 0.3; do
    start_nbdkit dst --filter=error memory size="$size" \
        error-zero-rate="$rate" error=EIO
    for conns in 1 4; do
        for round in 1 2; do
            expect_io_error zero offset "$NBDCOPY" -C "$conns" -T "$conns" \
                "$holes_uri" "$dst_uri"
        done
    done
    stop_server dst
done
# --no-extents: the zero requests come from zero detection alone.
start_nbdkit dst --filter=error memory size="$size" error-zero-rate=0.1 error=EIO
for conns in 1 4; do
    expect_io_error zero offset "$NBDCOPY" -C "$conns" -T "$conns" --no-extents \
        "$holes_uri" "$dst_uri"
done
stop_server dst

# ---------------------------------------------------------------------------
msg "flush errors"
fsize=$((4 * MiB))
make_test_file "$T/fsrc.img" "$fsize"
d=$T/fdst.img
fdst_uri=$(uri_for fdst)
# FAIL_AT: the flush call (1-based) that fails; 0 = none.  Calls are
# counted in $T/flushes under a lock (connections flush in parallel).
# (Builtins in the scripts but for dd and flock: each request runs one.)
start_flush_server() { # FAIL_AT
    truncate -s "$fsize" "$d"
    echo 0 >"$T/flushes"
    start_nbdkit fdst eval \
        get_size="echo $fsize" \
        pread="exec dd if='$d' skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
        pwrite="exec dd of='$d' seek=\$4 oflag=seek_bytes conv=notrunc status=none" \
        flush="exec 9>'$T/flushes.lock'; flock 9; read -r n <'$T/flushes'; n=\$((n + 1)); echo \$n >'$T/flushes'; if [ \$n -eq $1 ]; then echo 'EIO injected flush failure' >&2; exit 1; fi; exit 0" \
        can_multi_conn='exit 0'
}
for conns in 1 4; do
    start_flush_server 0
    run_copy --flush -C "$conns" -T "$conns" --request-size=1M "$T/fsrc.img" "$fdst_uri"
    stop_server fdst
    assert_same_file "$T/fsrc.img" "$d" "--flush -C $conns through the eval server"
    nflush=$(<"$T/flushes")
    msg "  a good --flush copy with -C $conns sends $nflush flush(es)"
    ((nflush >= 1)) || fail "--flush -C $conns sent no flush"
    for ((k = 1; k <= nflush; k++)); do
        start_flush_server "$k"
        expect_io_error flush any "$NBDCOPY" --flush -C "$conns" -T "$conns" \
            --request-size=1M "$T/fsrc.img" "$fdst_uri"
        stop_server fdst
        read -r n <"$T/flushes"
        ((k <= n)) || fail "flush $k was never sent, yet the copy failed?"
    done
done

# ---------------------------------------------------------------------------
msg "extents errors: fall back to reading, copy succeeds"
# Every extents request fails: 32M of sparse-random, all of it read.
ssize=$((32 * MiB))
sparse=(sparse-random size="$ssize" percent=30 seed=3 runlength=200000)
start_nbdkit ref -r "${sparse[@]}"
nbd_to_file "$(uri_for ref)" "$ssize" "$T/sparse.ref"
stop_server ref
for conns in 1 4; do
    start_nbdkit src --filter=log --filter=error -r "${sparse[@]}" \
        error-extents-rate=1 error=EIO logfile="$T/ext.req"
    start_nbdkit dst memory size="$ssize"
    run_copy -C "$conns" -T "$conns" "$src_uri" "$dst_uri"
    stop_server src
    assert_nbd_equals_file "$dst_uri" "$T/sparse.ref" "error-extents-rate=1 -C $conns"
    stop_server dst
    # (log filter: "connection=N ...Extents id=I return=-1 error=EIO")
    nfailed=$(grep -cE 'connection=[0-9]+ \.\.\.Extents id=[0-9]+ return=-1' "$T/ext.req" || true)
    next=$(log_count "$T/ext.req" Extents)
    nread=$(log_sum "$T/ext.req" Read)
    msg "  -C $conns: $nfailed of $next Extents requests failed, $nread bytes read"
    ((nfailed >= 1 && nfailed == next)) || fail "error-extents-rate=1: log shows $nfailed of $next failed"
    ((nread >= ssize)) || fail "extents always fail, yet only $nread of $ssize bytes read"
    rm -f "$T/ext.req"
done

# Half of them fail: 2.25G, mostly holes; compared with qemu-img against a
# server of the same seed without errors.  Several extents windows: they
# grow from 16M to the largest, 1G, twice over, and offsets pass 2^31.
# (Not bigger: a window whose extents fail is read whole, about 1 s of CPU
# per GiB between nbdkit and nbdcopy.)
bsize=$((2304 * MiB))
sparse=(sparse-random size="$bsize" percent=0.3 seed=3 runlength=1000000)
start_nbdkit ref -r "${sparse[@]}"
for round in 1 2; do
    for conns in 1 4; do
        start_nbdkit src --filter=log --filter=error -r "${sparse[@]}" \
            error-extents-rate=0.5 error=EIO logfile="$T/ext.req"
        start_nbdkit dst memory size="$bsize"
        run_copy -C "$conns" -T "$conns" "$src_uri" "$dst_uri"
        stop_server src
        qemu-img compare -q -f raw -F raw "$(uri_for ref)" "$dst_uri" ||
            fail "error-extents-rate=0.5 -C $conns: the copy differs from the source"
        stop_server dst
        nfailed=$(grep -cE 'connection=[0-9]+ \.\.\.Extents id=[0-9]+ return=-1' "$T/ext.req" || true)
        msg "  -C $conns: $nfailed of $(log_count "$T/ext.req" Extents) Extents requests failed"
        rm -f "$T/ext.req"
    done
done
msg PASS
