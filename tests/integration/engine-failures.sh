#!/usr/bin/env bash
# I/O errors anywhere fail the copy, with one connection or four:
#  - read, write and zero errors injected at random by nbdkit's error
#    filter (EIO) at several rates, each setting run more than once since
#    the filter picks at random (every copy issues hundreds of requests of
#    the failing kind, so each run meets errors);
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
# failing at random 50% on 4G, several extents windows, run twice).
# labels: error
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img flock

size=$((16 * MiB))

# expect_io_error OPERATION OFFSET? CMD...: the copy fails as it should.
expect_io_error() {
    local op=$1 want_offset=$2; shift 2
    local rc=0
    msg "expect $op failure: ${*:2}"
    "$@" >"$T/out.txt" 2>"$T/err.txt" || rc=$?
    local err
    err=$(cat "$T/err.txt")
    [[ $rc -ne 0 ]] || fail "exited 0 although ${op}s failed: $*"
    [[ $rc -eq 1 ]] || fail "exit status $rc (want 1) when ${op}s fail: $*; stderr: $err"
    [[ $(wc -l <"$T/err.txt") -eq 1 ]] ||
        fail "expected one line on stderr when ${op}s fail, got: $err"
    [[ $err == nbdcopy:\ * ]] || fail "stderr does not start with 'nbdcopy: ': $err"
    grep -qiF "Input/output error" <<<"$err" || fail "no 'Input/output error' in: $err"
    grep -qiw "$op" <<<"$err" || fail "the message does not name the $op: $err"
    if [[ $want_offset == offset ]]; then
        grep -qiF offset <<<"$err" || fail "the message gives no offset: $err"
    fi
    msg "  ok: $err"
}

# ---------------------------------------------------------------------------
msg "read errors"
for conns in 1 4; do
    for rate in 0.05 0.3 1; do
        for round in 1 2; do
            [[ $rate == 1 && $round == 2 ]] && continue
            start_nbdkit src --filter=error -r pattern size="$size" \
                error-pread-rate="$rate" error=EIO
            start_nbdkit dst memory size="$size"
            expect_io_error read offset "$NBDCOPY" -C "$conns" -T "$conns" \
                --request-size=64K "$(uri_for src)" "$(uri_for dst)"
            stop_server src
            stop_server dst
        done
    done
done
# To a file and to null: too.
start_nbdkit src --filter=error -r pattern size="$size" error-pread-rate=0.05 error=EIO
expect_io_error read offset "$NBDCOPY" -C 4 -T 4 --request-size=64K "$(uri_for src)" "$T/out.img"
expect_io_error read offset "$NBDCOPY" --request-size=64K "$(uri_for src)" null:
stop_server src

# ---------------------------------------------------------------------------
msg "write errors"
make_random_file "$T/src.img" "$size"
for conns in 1 4; do
    for rate in 0.05 0.3; do
        for round in 1 2; do
            start_nbdkit dst --filter=error memory size="$size" \
                error-pwrite-rate="$rate" error=EIO
            expect_io_error write offset "$NBDCOPY" -C "$conns" -T "$conns" \
                --request-size=64K "$T/src.img" "$(uri_for dst)"
            stop_server dst
        done
    done
done

# ---------------------------------------------------------------------------
msg "zero errors"
# 4K of data in every 64K: the holes between are zero requests (from the
# extents and from zero detection), a few hundred of them.
start_nbdkit holes -r data '( "x" * 4096 @+61440 ) * 256' size="$size"
for conns in 1 4; do
    for rate in 0.05 0.3; do
        for round in 1 2; do
            start_nbdkit dst --filter=error memory size="$size" \
                error-zero-rate="$rate" error=EIO
            expect_io_error zero offset "$NBDCOPY" -C "$conns" -T "$conns" \
                "$(uri_for holes)" "$(uri_for dst)"
            stop_server dst
        done
    done
    # --no-extents: the zero requests come from zero detection alone.
    start_nbdkit dst --filter=error memory size="$size" error-zero-rate=0.1 error=EIO
    expect_io_error zero offset "$NBDCOPY" -C "$conns" -T "$conns" --no-extents \
        "$(uri_for holes)" "$(uri_for dst)"
    stop_server dst
done

# ---------------------------------------------------------------------------
msg "flush errors"
fsize=$((4 * MiB))
make_test_file "$T/fsrc.img" "$fsize"
d=$T/fdst.img
# FAIL_AT: the flush call (1-based) that fails; 0 = none.  Calls are
# counted in $T/flushes under a lock (connections flush in parallel).
start_flush_server() { # FAIL_AT
    truncate -s "$fsize" "$d"
    echo 0 >"$T/flushes"
    start_nbdkit fdst eval \
        get_size="echo $fsize" \
        pread="dd if='$d' skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
        pwrite="dd of='$d' seek=\$4 oflag=seek_bytes conv=notrunc status=none" \
        flush="exec 9>'$T/flushes.lock'; flock 9; n=\$((\$(cat '$T/flushes') + 1)); echo \$n >'$T/flushes'; if [ \$n -eq $1 ]; then echo 'EIO injected flush failure' >&2; exit 1; fi; exit 0" \
        can_multi_conn='exit 0'
}
for conns in 1 4; do
    start_flush_server 0
    run_copy --flush -C "$conns" -T "$conns" --request-size=1M "$T/fsrc.img" "$(uri_for fdst)"
    stop_server fdst
    assert_same_file "$T/fsrc.img" "$d" "--flush -C $conns through the eval server"
    nflush=$(cat "$T/flushes")
    msg "  a good --flush copy with -C $conns sends $nflush flush(es)"
    ((nflush >= 1)) || fail "--flush -C $conns sent no flush"
    for ((k = 1; k <= nflush; k++)); do
        start_flush_server "$k"
        expect_io_error flush any "$NBDCOPY" --flush -C "$conns" -T "$conns" \
            --request-size=1M "$T/fsrc.img" "$(uri_for fdst)"
        stop_server fdst
        ((k <= $(cat "$T/flushes"))) || fail "flush $k was never sent, yet the copy failed?"
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
    run_copy -C "$conns" -T "$conns" "$(uri_for src)" "$(uri_for dst)"
    stop_server src
    assert_nbd_equals_file "$(uri_for dst)" "$T/sparse.ref" "error-extents-rate=1 -C $conns"
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

# Half of them fail: 4G (several extents windows), mostly holes; compared
# with qemu-img against a server of the same seed without errors.
bsize=$((4096 * MiB))
sparse=(sparse-random size="$bsize" percent=0.3 seed=3 runlength=1000000)
start_nbdkit ref -r "${sparse[@]}"
for round in 1 2; do
    for conns in 1 4; do
        start_nbdkit src --filter=log --filter=error -r "${sparse[@]}" \
            error-extents-rate=0.5 error=EIO logfile="$T/ext.req"
        start_nbdkit dst memory size="$bsize"
        run_copy -C "$conns" -T "$conns" "$(uri_for src)" "$(uri_for dst)"
        stop_server src
        qemu-img compare -q -f raw -F raw "$(uri_for ref)" "$(uri_for dst)" ||
            fail "error-extents-rate=0.5 -C $conns: the copy differs from the source"
        stop_server dst
        nfailed=$(grep -cE 'connection=[0-9]+ \.\.\.Extents id=[0-9]+ return=-1' "$T/ext.req" || true)
        msg "  -C $conns: $nfailed of $(log_count "$T/ext.req" Extents) Extents requests failed"
        rm -f "$T/ext.req"
    done
done
msg PASS
