#!/usr/bin/env bash
# Soak: a randomized fault matrix, run for a given time or number of copies
# (not part of CI). Each run copies a small image (4 MiB: random data,
# holes, allocated zeroes) with random options, while one fault is
# injected at random:
#   - nbdkit's error filter on the source (pread, extents) or destination
#     (pwrite, zero, trim) at a rate from 0.1 % to 100 %, EIO or ENOSPC;
#   - flush errors (nbdkit 1.32's error filter has none) from
#     tests/integration/lib/hostile_nbd_server.py as the destination;
#   - the source or destination server killed (SIGKILL) at a random moment;
#   - no fault at all;
# across engines and options (--synchronous, -C 1/2/4, --blkhash, --verify,
# --allocated, --flush, --no-extents, request sizes 64K..1M, file or NBD
# at the end without the fault). Every run is classified:
#   correct        exit 0 and the destination equals the source (and the
#                  --blkhash digest equals the reference digest)
#   clean-failure  exit 1 and exactly one line "nbdcopy: ..." on stderr
#   corruption     exit 0 but the copy or the digest is wrong
#   hang           still running when the watchdog (60 s) fired
#   crash          killed by a signal
#   no-message     any other failure (no or several lines, other status)
# and, separately, failed-on-extents-or-trim counts failures in runs whose
# only fault was on extents or trim (block status is advice; nbdcopy never
# sends trim): that should be zero too.
#
# Usage: scripts/soak.sh [-t SECONDS] [-n RUNS] [-s SEED] [-o RESULTS.tsv]
#   NBDCOPY=path (default build/nbdcopy). Runs until either limit is hit.
#   The table (markdown) goes to stdout; one line per run to RESULTS.tsv.
# Reproduce docs/reliability.md:
#   nice -n 10 scripts/soak.sh -n 1000 -s 1 -o soak.tsv
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

duration=0 max_runs=1000 seed=1 results=soak-results.tsv
while getopts "t:n:s:o:" opt; do
    case $opt in
        t) duration=$OPTARG ;;
        n) max_runs=$OPTARG ;;
        s) seed=$OPTARG ;;
        o) results=$OPTARG ;;
        *) echo "usage: $0 [-t SECONDS] [-n RUNS] [-s SEED] [-o RESULTS.tsv]" >&2; exit 2 ;;
    esac
done
[[ $results == /* ]] || results=$repo/$results
export NBDCOPY=${NBDCOPY:-$repo/build/nbdcopy}
[[ $NBDCOPY == /* ]] || NBDCOPY=$repo/$NBDCOPY
# lib.sh: servers on unix sockets in a private temporary directory $T,
# stopped and removed on exit; make_test_file.
source "$repo/tests/integration/lib/lib.sh"
TEST_NAME=soak
require_cmd nbdkit python3 timeout
RANDOM=$seed

size=$((4 * MiB))
make_test_file "$T/src.img" "$size"
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)
reference_digest=$("$py" "$TEST_LIB/blkhash_reference.py" "$T/src.img" sha256 65536)

# pick VAR WORDS...: sets VAR to one of the words at random. (No $(...):
# a subshell's $RANDOM is reseeded, so -s would not reproduce the runs.)
pick() {
    local var=$1
    shift
    local words=("$@")
    printf -v "$var" '%s' "${words[RANDOM % ${#words[@]}]}"
}
chance() { (( RANDOM % 100 < $1 )); } # PERCENT

classes=(correct clean-failure corruption hang crash no-message)
declare -A count=()
for c in "${classes[@]}"; do count[$c]=0; done
extents_trim_failures=0
printf 'run\tfault\trate\terrno\tkill_ms\toptions\tstatus\tclass\tmessage\n' >"$results"

# One copy: sets class and status.
run_once() {
    local run=$1
    pick fault none pread extents pwrite zero trim flush kill-src kill-dst
    pick rate 0.001 0.01 0.05 0.2 0.5 1
    pick errno EIO ENOSPC
    kill_ms=
    local options=() conns request_size
    pick conns 1 2 4
    pick request_size 64K 256K 1M
    chance 25 && options+=(--synchronous)
    options+=(-C "$conns" -T "$conns" --request-size="$request_size")
    chance 25 && options+=(--blkhash)
    chance 20 && options+=(--verify)
    chance 20 && options+=(--allocated)
    chance 30 && options+=(--flush)
    chance 10 && options+=(--no-extents)
    [[ $fault == flush ]] && ! [[ " ${options[*]} " == *" --flush "* ]] && options+=(--flush)
    options+=(--timeout=20)

    # The source: nbdkit over the file (faults there) or the file itself.
    local src=$T/src.img dst=$T/dst.img src_filters=() dst_filters=() src_params=() dst_params=()
    case $fault in
        pread | extents)
            src_filters=(--filter=error)
            src_params=("error-$fault-rate=$rate" "error=$errno") ;;
        pwrite | zero | trim)
            dst_filters=(--filter=error)
            dst_params=("error-$fault-rate=$rate" "error=$errno") ;;
        # Slowed down (10 ms a request) so that the kill lands mid-copy.
        kill-src)
            src_filters=(--filter=delay)
            src_params=(delay-read=10ms delay-extents=10ms) ;;
        kill-dst)
            dst_filters=(--filter=delay)
            dst_params=(delay-write=10ms delay-zero=10ms) ;;
    esac
    rm -f "$dst"
    if [[ ${#src_filters[@]} -gt 0 || $fault == kill-src ]] || chance 50; then
        start_nbdkit src "${src_filters[@]}" -r file "$T/src.img" "${src_params[@]}"
        src=$(uri_for src)
    fi
    if [[ $fault == flush ]]; then
        truncate -s "$size" "$dst"
        start_hostile dst "$dst" --multi-conn --error-rate "flush:$rate" --errno "$errno" \
            --seed "$RANDOM"
        dst=$(uri_for dst)
    elif [[ ${#dst_filters[@]} -gt 0 || $fault == kill-dst ]] || chance 50; then
        truncate -s "$size" "$dst"
        start_nbdkit dst "${dst_filters[@]}" file "$dst" "${dst_params[@]}"
        dst=$(uri_for dst)
    fi

    status=0
    local out=$T/run.out err=$T/run.err
    timeout -k 5 60 "$NBDCOPY" "${options[@]}" "$src" "$dst" >"$out" 2>"$err" &
    local copier=$!
    if [[ $fault == kill-* ]]; then
        kill_ms=$((RANDOM % 200))
        sleep "$(printf '0.%03d' "$kill_ms")"
        local pid name=${fault#kill-}
        if pid=$(cat "$T/$name.pid" 2>/dev/null); then
            kill -9 "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            _forget_pid "$pid"  # stop_server must not signal a reused pid
            rm -f "$T/$name.pid"
        fi
    fi
    wait "$copier" || status=$?
    stop_server src
    stop_server dst

    local lines message
    lines=$(wc -l <"$err")
    message=$(head -n 1 "$err" | cut -c1-200)
    if [[ $status -eq 124 || $status -eq 137 ]]; then
        class=hang
    elif [[ $status -ge 128 ]]; then
        class=crash
    elif [[ $status -eq 0 ]]; then
        class=correct
        cmp -s "$T/src.img" "$T/dst.img" || class=corruption
        if [[ " ${options[*]} " == *" --blkhash "* ]]; then
            [[ $(cat "$out") == "$reference_digest" ]] || class=corruption
        fi
        [[ $lines -eq 0 ]] || class=no-message  # success says nothing
    elif [[ $status -eq 1 && $lines -eq 1 && $message == nbdcopy:\ ?* ]]; then
        class=clean-failure
    else
        class=no-message
    fi
    if [[ $status -ne 0 && ( $fault == extents || $fault == trim ) ]]; then
        extents_trim_failures=$((extents_trim_failures + 1))
    fi
    if [[ $class != correct && $class != clean-failure ]]; then
        mkdir -p "${results%.tsv}.failures"
        cp "$err" "${results%.tsv}.failures/run-$run.err"
        msg "run $run: $class (status $status): fault=$fault rate=$rate ${options[*]}: $message"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$fault" "$rate" "$errno" \
        "$kill_ms" "${options[*]}" "$status" "$class" "$message" >>"$results"
}

start=$SECONDS
runs=0
declare -A by_fault=()
while ((runs < max_runs)) && ((duration == 0 || SECONDS - start < duration)); do
    runs=$((runs + 1))
    run_once "$runs"
    count[$class]=$((count[$class] + 1))
    by_fault["$fault $class"]=$((${by_fault["$fault $class"]:-0} + 1))
    ((runs % 50)) || msg "$runs runs, $((SECONDS - start)) s"
done

echo "| fault | runs | correct copy | clean failure | silent corruption | hang | crash | failure without a message |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for f in none pread extents pwrite zero trim flush kill-src kill-dst; do
    row="| $f"
    total=0
    cells=""
    for c in "${classes[@]}"; do
        n=${by_fault["$f $c"]:-0}
        total=$((total + n))
        cells+=" | $n"
    done
    echo "$row | $total$cells |"
done
cells=""
for c in "${classes[@]}"; do cells+=" | **${count[$c]}**"; done
echo "| **all** | **$runs**$cells |"
echo
echo "Failures in runs whose only fault was on extents or trim: $extents_trim_failures"
echo "Seed $seed, $runs runs in $((SECONDS - start)) s; per-run results in $results"
