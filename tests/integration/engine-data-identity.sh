#!/usr/bin/env bash
# The copy engine moves the right bytes whatever its settings: a covering
# set of option combinations (-C/-T 1/2/4, -R 1/4/64, --request-size
# 4K/64K/1M/32M, --queue-size below and above the request size, --sparse
# 0/512/4096/65536, --allocated, --destination-is-zero, --no-extents,
# --synchronous) against sources of many layouts:
#   sr1..sr3  nbdkit sparse-random 32M percent=30, three seeds and run lengths
#   d1, d2    nbdkit data: short odd-length runs at odd offsets, bytes
#             straddling every 4K / 64K boundary, size 7654321
#   zero      nbdkit null 7654321 (one zero extent)
#   pat, rnd  nbdkit pattern / random 7654321 (all data)
#   tf        a local sparse file (data, holes, allocated zeroes) 7654321
# onto nbdkit memory (compared with qemu-img compare), nbdkit file over a
# file of random garbage (zeroes must really be written), a local file
# (garbage, or fresh for --destination-is-zero), a loop device over garbage
# (root only; the bytes past the source's end must stay untouched), and
# null: (every non-zero byte of the source must have been read, none twice:
# nbdkit log filter on the source).  The reference bytes of each source
# come from qemu-img, not from the binary under test.
#
# Every run also checks, from -v, that the options reached the plan
# (request_size, requests, queue_size, sparse, allocated, extents,
# connections) and that the engine's own statistics stayed inside the
# limits: max_requests_in_flight <= -R, max_bytes_in_flight <=
# max(--queue-size, --request-size).
# labels: root
# processors: 2
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img python3 cmp

small=7654321
big=$((32 * MiB))

have_loop=1
if [[ $(id -u) -ne 0 ]] || ! command -v losetup >/dev/null 2>&1 ||
   [[ ! -e /dev/loop-control ]] || ! losetup -f >/dev/null 2>&1; then
    have_loop=0
    msg "no loop devices here (needs root): block device runs are skipped"
fi

# ---------------------------------------------------------------------------
# Sources.
declare -A SRC SIZE REF LOG

nbd_source() { # NAME SIZE NBDKIT-PLUGIN-AND-ARGS...
    local name=$1 size=$2; shift 2
    start_nbdkit "src-$name" --filter=log -r "$@" logfile="$T/src-$name.req"
    SRC[$name]="nbd+unix:///?socket=$T/src-$name.sock"
    SIZE[$name]=$size
    LOG[$name]=$T/src-$name.req
    REF[$name]=$T/$name.ref
    # qemu-img writes the export's size rounded up to a multiple of 512:
    # the check of the sources below checks that size and cuts it back.
    qemu-img convert -f raw -O raw "${SRC[$name]}" "${REF[$name]}" 2>"$T/readback.err" ||
        fail "qemu-img could not read source $name: $(<"$T/readback.err")"
}

nbd_source sr1 "$big" sparse-random size="$big" percent=30 seed=1 runlength=100000
nbd_source sr2 "$big" sparse-random size="$big" percent=30 seed=22 runlength=1000000
nbd_source sr3 "$big" sparse-random size="$big" percent=30 seed=333 runlength=20000
nbd_source d1 "$small" data '"AB"*7001 @^4096 "xyz" @1000003 "end" @3999999 ( "q" * 4097 @+12289 ) * 7' size="$small"
nbd_source d2 "$small" data '@511 ( 7 @+4095 9 @+65535 ) * 50 ( "data" * 5000 @+70001 ) * 9 @^65536 1 2 3 @7654320 255' size="$small"
nbd_source zero "$small" null size="$small"
nbd_source pat "$small" pattern size="$small"
nbd_source rnd "$small" random size="$small" seed=4242

SRC[tf]=$T/tf.img SIZE[tf]=$small REF[tf]=$T/tf.img LOG[tf]=
make_test_file "$T/tf.img" "$small"

# The sources are what this test claims they are (one python3 for all of
# them): the export's size, and the kind of bytes.
#   mixed  not all zeroes, yet some zero bytes
#   zero   all zeroes
#   pat    pattern: each 8-byte big-endian word is its offset, so 5 bytes
#          in 8 are 0: more than a quarter non-zero
#   rnd    more than 9/10 non-zero
#   file   (tf) the local file: its size exactly, and mixed
args=()
for s in sr1 sr2 sr3 d1 d2 zero pat rnd tf; do
    case $s in zero | pat | rnd) kind=$s ;; tf) kind="file" ;; *) kind="mixed" ;; esac
    args+=("$s" "${REF[$s]}" "${SIZE[$s]}" "$kind")
done
python3 - "${args[@]}" <<'PY' || fail "the sources are not what this test needs"
import os, sys
a = sys.argv[1:]
for name, path, size, kind in zip(a[0::4], a[1::4], a[2::4], a[3::4]):
    size, got = int(size), os.path.getsize(path)
    if kind == "file":
        if got != size:
            sys.exit(f"source {name}: size {got}, expected {size}")
    else:
        # qemu rounds the size up to a multiple of 512.
        if not size <= got < size + 512:
            sys.exit(f"source {name}: size {got}, expected {size}")
        os.truncate(path, size)
    with open(path, "rb") as f:
        data = f.read()
    nonzero = size - data.count(0)
    if kind in ("mixed", "file"):
        if nonzero == 0:
            sys.exit(f"source {name} reads as all zeroes")
        if nonzero >= size:
            sys.exit(f"source {name} has no zero bytes")
    elif kind == "zero" and nonzero != 0:
        sys.exit("null source is not all zeroes")
    elif kind == "pat" and not nonzero > size // 4:
        sys.exit("pattern source is not data")
    elif kind == "rnd" and not nonzero > size * 9 // 10:
        sys.exit("random source is not mostly data")
PY

# Garbage for the destinations to start from (random bytes: a byte the
# copy failed to write cannot pass for the source's), made once and cut to
# size for each copy. Big enough for the largest block device image.
head -c $((big + 8192 + 512)) /dev/urandom >"$T/garbage"
# garbage PATH SIZE: PATH holds the first SIZE bytes of the garbage.
garbage() { head -c "$2" "$T/garbage" >"$1"; }

# ---------------------------------------------------------------------------
# Checks on -v output.

# (Written without command substitutions: forks are slow on a busy machine.)

# opt NAME DEFAULT OPTIONS...: sets OPT to the value given to option NAME
# (last wins), or DEFAULT.
opt() {
    local name=$1
    OPT=$2
    shift 2
    while (($#)); do
        case $1 in
            "$name") OPT=$2; shift ;;
            "$name"=*) OPT=${1#*=} ;;
        esac
        shift
    done
}
# bytes VALUE: sets BYTES from 4K / 1M / 32M / a plain number.
bytes() {
    case $1 in
        *K) BYTES=$((${1%K} * 1024)) ;;
        *M) BYTES=$((${1%M} * MiB)) ;;
        *) BYTES=$1 ;;
    esac
}
# has OPTION OPTIONS...: sets HAS to true or false.
has() {
    local o=$1 a
    shift
    HAS=false
    for a in "$@"; do [[ $a == "$o" ]] && HAS=true; done
    return 0
}
# parse_line ARRAY-NAME LINE: the key=value words of LINE into ARRAY-NAME.
parse_line() {
    local -n kv=$1
    local w
    kv=()
    for w in $2; do
        [[ $w == *=* ]] && kv[${w%%=*}]=${w#*=}
    done
    return 0
}

declare -A P S
check_verbose() { # ERRFILE OPTIONS...
    local err=$1; shift
    local plan stats
    verbose_lines "$err"
    plan=$PLAN_LINE stats=$STATS_LINE
    [[ -n $plan ]] || fail "-v printed no 'connections=' line"
    parse_line P "$plan"
    # Options not given take the binary's defaults, read from the plan.
    local req reqs queue sparse conns
    opt --request-size "${P[request_size]}" "$@"; bytes "$OPT"; req=$BYTES
    opt -R "${P[requests]}" "$@"; reqs=$OPT
    opt --queue-size "${P[queue_size]}" "$@"; bytes "$OPT"; queue=$BYTES
    ((queue >= req)) || queue=$req
    opt --sparse 4096 "$@"; sparse=$OPT
    opt -C 4 "$@"; conns=$OPT
    # Raised to the endpoints' preferred block size (nbdkit 1.42's memory
    # plugin prefers 32K; nbdkit 1.32's says nothing), never lowered.
    local line preferred=0
    while read -r line; do
        [[ $line =~ preferred\ block\ size=([0-9]+) ]] &&
            ((BASH_REMATCH[1] > preferred)) && preferred=${BASH_REMATCH[1]}
    done < <(grep -E '^nbdcopy: .*: size=.*preferred block size=' "$err" || true)
    ((req >= preferred)) || req=$preferred
    [[ ${P[request_size]} -eq $req ]] ||
        fail "plan request_size, asked $req (or the preferred block size $preferred): $plan"
    [[ ${P[requests]} -eq $reqs ]] || fail "plan requests, asked $reqs: $plan"
    [[ ${P[queue_size]} -eq $queue ]] ||
        fail "plan queue_size wrong (want max(queue, request) = $queue): $plan"
    if [[ $sparse -eq 0 ]]; then
        [[ ${P[sparse]} -eq 0 ]] || fail "--sparse 0 not honoured: $plan"
    else
        # It may be raised to the destination's block size, never lowered.
        ((P[sparse] >= sparse)) || fail "plan sparse below $sparse: $plan"
    fi
    has --allocated "$@"
    [[ ${P[allocated]} == "$HAS" ]] || fail "plan allocated= does not follow --allocated: $plan"
    has --no-extents "$@"
    if [[ $HAS == true ]]; then
        [[ ${P[extents]} == false ]] || fail "--no-extents not honoured: $plan"
    fi
    has --synchronous "$@"
    if [[ $HAS == true ]]; then
        [[ ${P[synchronous]} == true ]] || fail "--synchronous not honoured: $plan"
    fi
    ((P[connections] <= conns)) || fail "more connections than -C: $plan"
    if [[ ${P[synchronous]} == false ]]; then
        [[ -n $stats ]] || fail "no 'workers=' statistics line after a parallel copy"
        parse_line S "$stats"
        ((S[max_requests_in_flight] <= reqs)) ||
            fail "max_requests_in_flight above -R $reqs: $stats"
        ((S[max_bytes_in_flight] <= queue)) ||
            fail "max_bytes_in_flight above max(queue, request)=$queue: $stats"
        ((S[workers] <= conns)) || fail "more workers than -C: $stats"
    fi
    LAST_STATS=$stats
}

# ---------------------------------------------------------------------------
# One copy.  DEST is mem | nbdfile | file | null | block.

NRUNS=0
copy_and_check() { # SOURCE DEST OPTIONS...
    local s=$1 d=$2; shift 2
    local size=${SIZE[$s]} ref=${REF[$s]} dz
    has --destination-is-zero "$@"; dz=$HAS
    local what="$s -> $d [$*]"
    local dst logmark=0
    NRUNS=$((NRUNS + 1))
    # (The servers' URIs are written out, not $(uri_for ...): a subshell a
    # copy adds up over forty copies.)
    case $d in
        mem)
            start_nbdkit dst memory size="$size"
            dst="nbd+unix:///?socket=$T/dst.sock" ;;
        nbdfile)
            [[ $dz == true ]] && fail "test bug: nbdfile is not zero"
            garbage "$T/dst.img" "$size"
            start_nbdkit dst file "$T/dst.img"
            dst="nbd+unix:///?socket=$T/dst.sock" ;;
        file)
            # (": >" empties the file without an rm process.)
            if [[ $dz == true ]]; then
                : >"$T/dst.img"
                truncate -s "$size" "$T/dst.img"
            else
                garbage "$T/dst.img" "$size"
            fi
            dst=$T/dst.img ;;
        block)
            if ((!have_loop)); then
                msg "skip $what (no loop devices)"
                return 0
            fi
            # Round up to whole sectors plus 8K: the tail must stay as it was.
            local bsize=$(( (size + 511) / 512 * 512 + 8192 ))
            if [[ $dz == true ]]; then
                : >"$T/dst.img"
                truncate -s "$bsize" "$T/dst.img"
            else
                garbage "$T/dst.img" "$bsize"
            fi
            tail -c +$((size + 1)) "$T/dst.img" >"$T/tail.before"
            attach_loop "$T/dst.img"
            dst=$LOOPDEV ;;
        null)
            [[ -n ${LOG[$s]} ]] || fail "test bug: null runs need a logged source"
            logmark=$(wc -l <"${LOG[$s]}")
            dst=null: ;;
    esac

    msg "run: nbdcopy -v $* $s $d"
    local rc=0 t0=$SECONDS
    "$NBDCOPY" -v "$@" "${SRC[$s]}" "$dst" 2>"$T/run.err" >"$T/run.out" || rc=$?
    if [[ $rc -ne 0 ]]; then
        grep -v '^libnbd' "$T/run.err" | tail -n 5 >&2
        fail "$what: exit status $rc"
    fi
    [[ ! -s $T/run.out ]] || fail "$what: printed on stdout"
    check_verbose "$T/run.err" "$@"

    # (cmp -s also fails when the sizes differ: "EOF on ...".)
    case $d in
        mem)
            # qemu-img compares the export with the reference itself (no
            # read-back file to write and cmp).
            qemu-img compare -f raw -F raw "$ref" "$dst" >"$T/compare.out" 2>&1 ||
                fail "$what: content differs ($(<"$T/compare.out"))"
            stop_server dst ;;
        nbdfile)
            stop_server dst
            cmp -s "$ref" "$T/dst.img" ||
                fail "$what: content differs ($(cmp "$ref" "$T/dst.img" 2>&1 | head -1))" ;;
        file)
            cmp -s "$ref" "$T/dst.img" ||
                fail "$what: content differs ($(cmp "$ref" "$T/dst.img" 2>&1 | head -1))" ;;
        block)
            detach_loop "$dst"
            cmp -s -n "$size" "$ref" "$T/dst.img" ||
                fail "$what: content differs ($(cmp -n "$size" "$ref" "$T/dst.img" 2>&1 | head -1))"
            cmp -s -i "$size:0" "$T/dst.img" "$T/tail.before" ||
                fail "$what: bytes past the end of the source were modified" ;;
        null)
            # Every non-zero byte of the source was read, and no byte twice.
            tail -n +$((logmark + 1)) "${LOG[$s]}" >"$T/null.req"
            local missing twice past nread
            logtool uncovered "$T/null.req" Read "$ref" -- overlap "$T/null.req" Read \
                -- outside "$T/null.req" Read "$size" -- sum "$T/null.req" Read \
                >"$T/null.counts" || fail "$what: engine-logtool.py failed"
            { read -r missing && read -r twice && read -r past && read -r nread; } \
                <"$T/null.counts" || fail "$what: engine-logtool.py printed too little"
            msg "  null: $nread bytes read; $LAST_STATS"
            [[ $missing -eq 0 ]] || fail "$what: $missing non-zero source bytes never read"
            [[ $twice -eq 0 ]] || fail "$what: $twice bytes read more than once"
            [[ $past -eq 0 ]] || fail "$what: $past bytes read past the end"
            has --no-extents "$@"
            if [[ $HAS == true ]]; then
                [[ $nread -eq $size ]] || fail "$what: --no-extents read $nread of $size bytes"
            fi ;;
    esac
}

# ---------------------------------------------------------------------------
# The covering set: every option value meets several sources and
# destinations, and every source several destination kinds.

# sparse-random, 32M
copy_and_check sr1 mem     -C 4 -T 4 -R 64
copy_and_check sr1 nbdfile -C 2 -T 2 -R 4 --request-size 64K --sparse 512
copy_and_check sr1 file    --request-size 4K -R 1 -C 1 -T 1
copy_and_check sr1 null    --no-extents -C 4 -T 4
copy_and_check sr1 block   -C 2 -T 2 --sparse 65536
copy_and_check sr2 nbdfile --allocated -C 4 -T 4 --request-size 1M --queue-size 64K
copy_and_check sr2 file    --queue-size 64M -R 64 --sparse 0 -C 2 -T 2
copy_and_check sr2 block   --destination-is-zero -R 4
copy_and_check sr2 mem     --destination-is-zero --no-extents --sparse 512 -C 2 -T 2
copy_and_check sr3 nbdfile --no-extents --sparse 0 -C 1 -T 1
copy_and_check sr3 file    --allocated --request-size 64K -C 4 -T 4
copy_and_check sr3 null    -R 1 -C 1 -T 1
copy_and_check sr3 mem     --synchronous --request-size 64K
copy_and_check sr3 mem     -C 4 -T 4 -R 4 --request-size 4K --queue-size 64K --sparse 65536

# data plugin: odd runs at odd offsets
copy_and_check d1 mem      -C 2 -T 2
copy_and_check d1 nbdfile  --sparse 65536 --request-size 4K -R 4
copy_and_check d1 file     --sparse 512 -R 1
copy_and_check d1 block    --request-size 32M --allocated
copy_and_check d1 null     -C 4 -T 4 --request-size 64K
copy_and_check d1 mem      --destination-is-zero --sparse 65536 -C 4 -T 4 --request-size 64K
copy_and_check d2 mem      --request-size 4K --sparse 4096 -C 4 -T 4
copy_and_check d2 nbdfile  --sparse 65536 --queue-size 64K --request-size 1M -C 2 -T 2
copy_and_check d2 file     --destination-is-zero --sparse 512 -C 4 -T 4
copy_and_check d2 block    --no-extents --sparse 512 -R 64
copy_and_check d2 nbdfile  --synchronous --sparse 512 --no-extents
copy_and_check d2 null     --no-extents --request-size 32M

# all zero
copy_and_check zero nbdfile
copy_and_check zero file    --allocated -C 2 -T 2
copy_and_check zero mem     --destination-is-zero
copy_and_check zero block   --no-extents --sparse 0 -C 4 -T 4
copy_and_check zero nbdfile --no-extents --sparse 65536 -R 1 --request-size 64K
copy_and_check zero null

# all data
copy_and_check pat mem      -C 4 -T 4 --request-size 64K -R 4
copy_and_check pat nbdfile  --request-size 32M --queue-size 64M
copy_and_check pat file     --sparse 0 --no-extents -C 2 -T 2
copy_and_check pat null     -C 2 -T 2
copy_and_check pat block    --allocated --queue-size 64K -R 64
copy_and_check rnd mem      --queue-size 64K --request-size 1M -C 2 -T 2
copy_and_check rnd block    -R 1 --request-size 4K
copy_and_check rnd file     --synchronous --request-size 4K

# local sparse file source
copy_and_check tf mem       -C 4 -T 4
copy_and_check tf file      --request-size 4K --sparse 512
copy_and_check tf block     --destination-is-zero
copy_and_check tf mem       --no-extents -R 4 --request-size 32M --sparse 512

msg "PASS ($NRUNS copies in $SECONDS s)"
