#!/usr/bin/env bash
# The engine's limits hold: -R (requests in flight per connection) and
# --queue-size (data bytes in flight per worker; a request larger than the
# queue runs alone, so the bound is max(queue, request)).
#
# Two independent checks for each setting:
#  - the engine's own statistics (-v: "nbdcopy: workers=N
#    max_requests_in_flight=N max_bytes_in_flight=N ..."):
#    max_requests_in_flight <= R, max_bytes_in_flight <= max(queue, request);
#  - the source server: nbdkit --filter=log --filter=delay delay-read=10ms,
#    the log filter outermost so a request is logged when it arrives and
#    again when it is answered ("connection=C Read id=I ..." /
#    "connection=C ...Read id=I return=0").  Walking the log gives the Read
#    requests outstanding at once on each connection: at most R, and at
#    most max(queue, request) bytes, i.e. one read at a time when the queue
#    is smaller than a request.
# Zero requests do not count against the byte budget: a sparse source with
# --queue-size below the request size still copies, and still within -R.
# The copies are compared with the source each time.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img python3

size=$((16 * MiB))
start_nbdkit src --filter=log --filter=delay -r pattern size="$size" \
    delay-read=10ms logfile="$T/src.req"
nbd_to_file "$(uri_for src)" "$size" "$T/src.ref"

start_nbdkit sparse --filter=log --filter=delay -r \
    sparse-random size=$((64 * MiB)) percent=20 seed=5 runlength=300000 \
    delay-read=10ms logfile="$T/sparse.req"
nbd_to_file "$(uri_for sparse)" $((64 * MiB)) "$T/sparse.ref"

# field LINE NAME: sets F to the value of NAME= in LINE (the first), or
# empty. (No fork: five fields a copy.)
field() {
    F=
    [[ " $1" =~ \ $2=([^ ]*) ]] && F=${BASH_REMATCH[1]}
    return 0
}

# bound SOURCE R QUEUE REQUEST OPTIONS...: copy with OPTIONS and check.
bound() {
    local src=$1 r=$2 queue=$3 req=$4; shift 4
    local cap=$((queue > req ? queue : req))
    local srcsize=$size ref=$T/src.ref
    [[ $src == sparse ]] && srcsize=$((64 * MiB)) ref=$T/sparse.ref
    local mark
    mark=$(wc -l <"$T/$src.req")
    # The destination: nbdkit file over a new sparse file (zeroes), which
    # the copy's writes cost half the CPU that nbdkit memory's do.
    : >"$T/dst.img"
    truncate -s "$srcsize" "$T/dst.img"
    start_nbdkit dst file "$T/dst.img"
    msg "run: nbdcopy -v $* ($src)"
    "$NBDCOPY" -v "$@" "nbd+unix:///?socket=$T/$src.sock" "nbd+unix:///?socket=$T/dst.sock" \
        2>"$T/run.err" ||
        { grep -v '^libnbd' "$T/run.err" >&2; fail "copy with $* failed"; }
    stop_server dst
    cmp -s "$ref" "$T/dst.img" ||
        fail "$*: copy differs from the source ($(cmp "$ref" "$T/dst.img" 2>&1 | head -1))"

    local plan stats mr mb
    verbose_lines "$T/run.err"
    plan=$PLAN_LINE stats=$STATS_LINE
    [[ -n $plan ]] || fail "$*: no plan line on -v"
    [[ -n $stats ]] || fail "$*: no statistics line on -v"
    msg "  $stats"
    field "$plan" synchronous
    [[ $F == false ]] || fail "$*: not a parallel copy: $plan"
    field "$plan" requests
    [[ $F -eq $r ]] || fail "$*: plan says $plan"
    field "$plan" queue_size
    [[ $F -eq $cap ]] || fail "$*: plan queue_size, want $cap: $plan"
    field "$stats" max_requests_in_flight
    mr=$F
    field "$stats" max_bytes_in_flight
    mb=$F
    ((mr <= r)) || fail "$*: max_requests_in_flight=$mr > -R $r"
    ((mb <= cap)) || fail "$*: max_bytes_in_flight=$mb > max(queue, request) = $cap"
    ((mb > 0 && mr > 0)) || fail "$*: statistics show nothing in flight: $stats"

    tail -n +$((mark + 1)) "$T/$src.req" >"$T/part.req"
    local out n bytes nread
    # One python3: the Read bytes, then the most reads outstanding at once.
    logtool sum "$T/part.req" Read -- maxout "$T/part.req" Read >"$T/counts" ||
        fail "$*: engine-logtool.py failed"
    { read -r nread && read -r out; } <"$T/counts" ||
        fail "$*: engine-logtool.py printed too little"
    ((nread > 0)) || fail "$*: the source log shows no reads"
    n=${out% *} bytes=${out#* }
    msg "  source server: at most $n reads, $bytes bytes outstanding on one connection"
    ((n <= r)) || fail "$*: $n reads outstanding at once on one source connection, -R $r"
    ((bytes <= cap)) ||
        fail "$*: $bytes read bytes outstanding at once on one connection, queue bound $cap"
    MAXREADS=$n MAXREQUESTS=$mr
}

# The log analysis must see overlap where there is some.  Whether nbdkit's
# threads pick up a second read before the first is answered depends on how
# busy the machine is, so the check runs on a real request and its answer
# from the log, twice over under another id, in a known order: two reads
# arrive on one connection, then both are answered.
check_log_analysis() { # LOGFILE
    local start id end out
    start=$(grep -m1 -E 'connection=[0-9]+ Read id=[0-9]+ ' "$1") ||
        fail "log analysis check: no read in $1"
    id=$(grep -o ' id=[0-9]*' <<<"$start")
    end=$(grep -m1 -F "$(grep -o 'connection=[0-9]*' <<<"$start") ...Read$id " "$1") ||
        fail "log analysis check: no answer to '$start'"
    printf '%s\n' "$start" "${start/$id /$id"0000" }" "$end" "${end/$id /$id"0000" }" \
        >"$T/order.req"
    out=$(logtool maxout "$T/order.req" Read)
    [[ ${out% *} == 2 ]] ||
        fail "log analysis broken: two reads outstanding read as '$out':"$'\n'"$(cat "$T/order.req")"
}

bound src 4 $((12 * MiB)) "$MiB" -R 4 --queue-size=12M
# With -R 4 the engine puts several reads in flight before the first is
# answered (its own count, decided when it submits, not by timing).
((MAXREQUESTS >= 2)) || fail "-R 4: the engine never had two reads in flight"
check_log_analysis "$T/part.req"
bound src 64 $((2 * MiB)) "$MiB" --queue-size=2M -C 1
bound src 64 65536 "$MiB" --queue-size=64K --request-size=1M -C 2 -T 2
[[ $MAXREADS -eq 1 ]] || fail "queue smaller than a request: $MAXREADS reads at once"
bound src 1 $((12 * MiB)) "$MiB" -R 1 --queue-size=12M -C 2 -T 2
bound src 16 $((256 * 1024)) 65536 --request-size=64K -R 16 --queue-size=256K
bound src 3 $((64 * MiB)) 4096 --request-size=4K -R 3 --queue-size=64M -C 2 -T 2
bound src 8 $((32 * MiB)) $((32 * MiB)) --request-size=32M -R 8 --queue-size=32M -C 1
# Sparse source: zero requests take request slots but no data budget.
bound sparse 2 65536 "$MiB" -R 2 --queue-size=64K -C 2 -T 2
bound sparse 5 $((3 * MiB)) "$MiB" -R 5 --queue-size=3M --no-extents
msg PASS
