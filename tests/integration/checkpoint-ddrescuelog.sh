#!/usr/bin/env bash
# --checkpoint=FILE is a GNU ddrescue mapfile at every stage, and ddrescuelog
# agrees with what it marks done (our parser's sum of the '+' blocks: the
# "rescued:" line of -t, its area count, and -l+ / -l? at 4096-byte blocks,
# which this source's layout keeps every range on):
# - before anything is durable there is no FILE (first written at the first
#   checkpoint): not after a copy whose every write fails (nor FILE.tmp),
#   not while a copy runs before its first checkpoint;
# - partly done: SIGINT, then (resumed, --synchronous) SIGTERM, each makes
#   a last checkpoint: exit 130 / 143, FILE marks more done than before
#   (and never less), the destination holds the source's bytes there, and
#   "ddrescuelog -D" exits non-zero; the resumed run does not rewrite FILE
#   before it has something new;
# - finished: every block '+', -D exits 0;
# - a rerun of the finished copy exits 0, copies nothing (the source's log
#   shows only the fingerprint and destination samples, no copy read),
#   and leaves the destination (bytes and mtime) and FILE (not rewritten)
#   as they were.
# Then 20 SIGKILLs at spread points of a copy (counted from the end of its
# start-up, the probe of FILE.tmp) that checkpoints every 10 ms
# (NBDCOPY_CHECKPOINT_SECONDS=0.01), both engines, while FILE is read as
# often as the shell can without a process (every 2 ms or so, several
# times per checkpoint; each new content kept): every snapshot and FILE
# after every kill is a whole mapfile (never empty or partial: it is
# replaced by rename), a stale
# FILE.tmp (even garbage) is never read as FILE, and the last run leaves
# no FILE.tmp and a destination equal to the source.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd nbdkit

# make_source PATH SIZE...: in every MiB data, a hole, data, a hole (on
# 4 KiB): random bytes at [0, 256 KiB) and [512 KiB, 640 KiB).  (One python
# start for every source, not a head and a dd per piece.)
make_source() {
    python3 - "$@" <<'PY' || fail "cannot make the sources $*"
import os, sys
args = sys.argv[1:]
for path, size in zip(args[::2], args[1::2]):
    size = int(size)
    with open(path, "wb") as f:
        for off in range(0, size, 1 << 20):
            os.pwrite(f.fileno(), os.urandom(262144), off)
            os.pwrite(f.fileno(), os.urandom(131072), off + 524288)
        f.truncate(size)
PY
}
size=$((16 * MiB))
make_source "$T/src.img" "$size" "$T/storm-src.img" $((40 * MiB))  # (the second for the storm)
start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/src.reads"
src=$(uri_for src)
map=$T/copy.map
dst=$T/dst.img
unset NBDCOPY_CHECKPOINT_SECONDS  # the default, 5 s: no timed checkpoint below

# check_ddrescuelog MAP WHAT [; SUB-COMMAND ARGS...]...: ddrescuelog reads
# in MAP what our parser does.  The further ctool sub-commands run in the
# same python start (as for assert_map), their lines left in MAP_MORE.
check_ddrescuelog() {
    local map=$1 what=$2 rescued areas plus todo lines
    shift 2
    assert_map "$map" "$what" ";" ddrescue-rescued "$map" "$@"
    rescued=${MAP_MORE[0]}
    MAP_MORE=("${MAP_MORE[@]:1}")
    assert_map_done_status "$map" "$what"
    areas=$(grep -E '^ *rescued:' "$T/ddrescuelog.out") || fail "$what: no rescued: line"
    [[ $areas =~ rescued:\ +([0-9]+\ [kMG]?B),\ +in\ +([0-9]+)\ area ]] ||
        fail "$what: unexpected ddrescuelog -t line: $areas"
    [[ ${BASH_REMATCH[1]} == "$rescued" ]] ||
        fail "$what: ddrescuelog -t says rescued ${BASH_REMATCH[1]}, the '+' blocks sum to $MAP_DONE ($rescued)"
    [[ ${BASH_REMATCH[2]} -eq $MAP_RUNS ]] ||
        fail "$what: ddrescuelog -t counts ${BASH_REMATCH[2]} rescued areas, FILE has $MAP_RUNS"
    ddrescuelog -b 4096 -l+ "$map" >"$T/blocks" || fail "$what: ddrescuelog -l+ failed"
    mapfile -t lines <"$T/blocks"
    plus=${#lines[@]}
    ddrescuelog -b 4096 -l? "$map" >"$T/blocks" || fail "$what: ddrescuelog -l? failed"
    mapfile -t lines <"$T/blocks"
    todo=${#lines[@]}
    ((plus * 4096 == MAP_DONE)) ||
        fail "$what: ddrescuelog -l+ lists $plus blocks of 4096, FILE marks $MAP_DONE bytes done"
    ((todo * 4096 == MAP_SIZE - MAP_DONE)) ||
        fail "$what: ddrescuelog -l? lists $todo blocks of 4096, FILE leaves $((MAP_SIZE - MAP_DONE)) bytes"
    msg "$what: $MAP_DONE of $MAP_SIZE bytes done in $MAP_RUNS runs; ddrescuelog: rescued $rescued"
}

# assert_holds WHAT BAD: BAD, the line of ctool's "holds MAP
# $source_file $dst" (run with the check of MAP), says the destination
# holds the source's bytes wherever MAP says they were copied.
source_file=$T/src.img
assert_holds() {
    [[ $2 -eq -1 ]] || fail "$1: FILE marks offset $2 done, the destination differs there"
}

# progressed: the copy said more than 0/100 on --progress=3 (read by the
# shell: the wait polls it 20 times a second).
progressed() {
    local text='' re=$'(^|\n)[1-9][0-9]*/100(\n|$)'
    IFS= read -r -d '' text 2>/dev/null <"$T/progress.txt" || true
    [[ $text =~ $re ]]
}

# --- Nothing durable, no FILE: a copy whose every write fails leaves
# neither FILE nor FILE.tmp (a rerun starts again).
start_nbdkit bad --filter=error memory size="$size" error=EIO error-rate=100%
expect_fail "$NBDCOPY" --checkpoint="$T/failed.map" "$src" "$(uri_for bad)"
assert_err_contains "Input/output error"
[[ ! -e $T/failed.map ]] || fail "a copy that made nothing durable wrote FILE: $(cat "$T/failed.map")"
[[ ! -e $T/failed.map.tmp ]] || fail "a copy that made nothing durable left FILE.tmp"
stop_server bad

# interrupt SIGNAL STATUS ENGINE-OPTIONS...: starts the copy, waits until
# something was copied, checks FILE is as before the run (no checkpoint is
# due in the first 5 s: absent, or not rewritten by a resumed run with
# nothing new), then signals it.
interrupt() {
    local signal=$1 status=$2 pid i rc=0 before start
    shift 2
    rm -f "$T/progress.txt"
    before=$(stat -c %i "$map" 2>/dev/null || echo none)  # renamed over: a new inode
    start=${EPOCHREALTIME/./}
    "$NBDCOPY" --rate=2M --request-size=256K --progress=3 "$@" --checkpoint="$map" "$src" "$dst" \
        3>"$T/progress.txt" 2>"$T/err.txt" &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        progressed && break
        _alive "$pid" || break
        nap 0.05
    done
    _alive "$pid" || fail "$signal: the copy ended before it could be interrupted"
    progressed || fail "$signal: the copy never got going"
    if ((${EPOCHREALTIME/./} - start < 4000000)); then
        [[ $(stat -c %i "$map" 2>/dev/null || echo none) == "$before" ]] ||
            fail "$signal: FILE was written before the first checkpoint"
    else
        msg "$signal: (slow machine: too late to check FILE before the first checkpoint)"
    fi
    kill -s "$signal" "$pid"
    wait "$pid" || rc=$?
    sed 's/^/    stderr: /' "$T/err.txt" >&2
    [[ $rc -eq $status ]] || fail "$signal: exit status $rc, expected $status"
    grep -qxE "nbdcopy: interrupted after copying [0-9]+ of $size bytes" "$T/err.txt" ||
        fail "$signal: unexpected message: $(cat "$T/err.txt")"
}

# --- Partly done: SIGINT makes the last checkpoint, the first FILE.
interrupt INT 130
check_ddrescuelog "$map" "after SIGINT" ";" holds "$map" "$source_file" "$dst"
((MAP_DONE > 0 && MAP_DONE < size)) || fail "after SIGINT FILE marks $MAP_DONE of $size bytes done"
assert_holds "after SIGINT" "${MAP_MORE[0]}"
after_int=$MAP_DONE

# --- Resumed with --synchronous, then SIGTERM.
cp "$map" "$T/before-run.map"
interrupt TERM 143 --synchronous
check_ddrescuelog "$map" "after SIGTERM" ";" lost "$map" "$T/before-run.map" \
    ";" holds "$map" "$source_file" "$dst"
((MAP_DONE > after_int && MAP_DONE < size)) ||
    fail "after SIGTERM FILE marks $MAP_DONE bytes done (before: $after_int)"
[[ ${MAP_MORE[0]} -eq 0 ]] || fail "SIGTERM: ranges done before are lost"
assert_holds "after SIGTERM" "${MAP_MORE[1]}"

# --- Finished.
run_copy --checkpoint="$map" "$src" "$dst"
check_ddrescuelog "$map" "finished"
[[ $MAP_DONE -eq $size && $MAP_RUNS -eq 1 ]] || fail "finished: $MAP_DONE of $size bytes done"
[[ -z $(ddrescuelog -b 4096 -l? "$map") ]] || fail "finished: ddrescuelog -l? lists blocks"
grep -qxE "0x0*1000000 +\+ +1" "$map" || fail "finished: the status line is not '$size +': $(sed -n 8p "$map")"
assert_same_file "$T/src.img" "$dst" "finished copy"

# --- A rerun of the finished copy.
cp "$dst" "$T/dst.saved"
cp "$map" "$T/finished.map"
mtime=$(stat -c %y "$dst")
inode=$(stat -c %i "$map")
stop_server src
start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/rerun.reads"
run_copy -v --checkpoint="$map" "$src" "$dst"
grep -qxF "nbdcopy: checkpoint=$map: resuming with $size bytes done" "$T/cmd.err" ||
    fail "rerun of a finished copy: -v says $(grep resuming "$T/cmd.err")"
check_ddrescuelog "$map" "after the rerun" ";" reads "$T/finished.map" "$T/rerun.reads" 1
read -r sampled copies copied _ <<<"${MAP_MORE[0]}"
msg "rerun of a finished copy: $copies copy reads ($copied bytes), $sampled sample reads"
[[ $copies -eq 0 ]] || fail "a rerun of a finished copy read $copied bytes in $copies requests"
((sampled <= 17)) || fail "a rerun of a finished copy made $sampled sample reads"
[[ $(log_count "$T/rerun.reads" Read) -eq $sampled ]] || fail "reads the tool did not classify"
assert_unchanged "$dst" "$T/dst.saved" "rerun of a finished copy"
[[ $(stat -c %y "$dst") == "$mtime" ]] || fail "rerun of a finished copy: the destination's mtime changed"
cmp -s "$map" "$T/finished.map" || fail "rerun of a finished copy changed FILE"
[[ $(stat -c %i "$map") == "$inode" ]] || fail "rerun of a finished copy rewrote FILE (nothing new)"

# --- SIGKILL, many times, while FILE is rewritten every 10 ms (64 KiB
# requests at 2 MiB/s: something new at nearly every checkpoint), from a
# source large enough not to be finished by then.
export NBDCOPY_CHECKPOINT_SECONDS=0.01
size=$((40 * MiB))
source_file=$T/storm-src.img  # (made at the start)
map=$T/storm.map
dst=$T/storm.img
delays_ms=(50 300 120 450 200 80 380 250 150 500 100 330 60 420 180 280 220 90 360 140)
snapshots=() kills=0 tmps=0 n=0 reads=0 last_snapshot=
# snapshot: read FILE, by the shell (no process: a fork costs more than
# the read), and keep what it read when it is not what the previous read
# saw (the same text twice is the same check); then nap 2 ms.
snapshot() {
    local text=$'\1'
    IFS= read -r -d '' text 2>/dev/null <"$map" || true
    [[ $text == $'\1' ]] || reads=$((reads + 1))
    if [[ $text != $'\1' && $text != "$last_snapshot" ]]; then
        last_snapshot=$text
        n=$((n + 1))
        printf '%s' "$text" >"$T/snap.$n"
        snapshots+=("$T/snap.$n")
    fi
    nap 0.002
}
for delay in "${delays_ms[@]}"; do
    engine=(); ((kills % 2)) && engine=(--synchronous)
    # A stale FILE.tmp, as a kill in the middle of a write leaves it:
    # garbage, or the first half of FILE. It must never be read.
    if [[ -f $map ]]; then
        IFS= read -r -d '' text <"$map" || true  # (a mapfile: no NUL byte)
        printf '%s' "$text" >"$T/previous.map"
        printf '%s' "${text:0:${#text}/2}" >"$map.tmp"
    else
        printf 'garbage, not a mapfile\n' >"$map.tmp"
    fi
    "$NBDCOPY" --rate=2M --request-size=64K "${engine[@]}" --checkpoint="$map" \
        "$source_file" "$dst" 2>"$T/kill.err" &
    pid=$!
    # The delay counts from the moment the run is past its start-up: it
    # has probed FILE.tmp (created and removed it, the stale one with it).
    # Counted from the launch instead, a slow start (ASan at full load)
    # took every delay, and no run ever reached a checkpoint.
    started_by=$((${EPOCHREALTIME/./} + 60000000))
    while [[ -e $map.tmp ]] && kill -0 "$pid" 2>/dev/null; do
        snapshot
        ((${EPOCHREALTIME/./} < started_by)) || fail "storm: run $((kills + 1)) not started after 60 s (FILE.tmp still there)"
    done
    deadline=$((${EPOCHREALTIME/./} + delay * 1000))
    while ((${EPOCHREALTIME/./} < deadline)); do snapshot; done
    kill -9 "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    [[ $rc -eq 137 ]] || fail "storm: nbdcopy exited $rc before SIGKILL: $(head -c 300 "$T/kill.err")"
    kills=$((kills + 1))
    [[ -e $map.tmp ]] && tmps=$((tmps + 1))  # (a kill between create and rename)
    [[ -f $map ]] || continue  # killed before it wrote FILE at all
    # (One python start: the check, what was lost, what the destination holds.)
    more=(";" holds "$map" "$source_file" "$dst")
    [[ -f $T/previous.map ]] && more+=(";" lost "$map" "$T/previous.map")
    assert_map "$map" "storm: after kill $kills (${delay} ms)" "${more[@]}"
    ((MAP_DONE < size)) || fail "storm: the copy finished before kill $kills"
    if [[ -f $T/previous.map ]]; then
        [[ ${MAP_MORE[1]} -eq 0 ]] || fail "storm: kill $kills: ranges done before are lost"
    fi
    assert_holds "storm: after kill $kills" "${MAP_MORE[0]}"
done
msg "storm: $kills kills, FILE.tmp there after $tmps of them, last FILE: $MAP_DONE of $size bytes done"
((${#snapshots[@]} > 0)) || fail "storm: no snapshot of FILE taken"
out=$(ctool checkall "${snapshots[@]}" 2>&1) || fail "storm: $out"
msg "storm: FILE read $reads times while it was rewritten, its ${#snapshots[@]} different texts all whole"
((MAP_DONE > 0)) || fail "storm: nothing was ever marked done"
run_copy --checkpoint="$map" "$source_file" "$dst"
assert_map "$map" "storm: the last run"
[[ $MAP_DONE -eq $size ]] || fail "storm: the last run leaves $MAP_DONE of $size bytes done"
[[ ! -e $map.tmp ]] || fail "storm: the last run left $map.tmp behind"
assert_same_file "$source_file" "$dst" "storm: the last run"
msg PASS
