#!/usr/bin/env bash
# --checkpoint=FILE survives SIGKILL: a copy paced by --rate from an nbdkit
# source (data with holes) is killed four times, each time at another point
# (0 to 0.25 s after one of its checkpoints; nbdcopy alone, or with the
# "[ CMD ]" server it started, as in a crash), into a file, into nbdkit
# memory (the same server across the kills) and into a qcow2 image through
# "[ qemu-nbd -f qcow2 ]", in both engines.  After every kill FILE is a
# whole mapfile (our parser and ddrescuelog -t accept it), "ddrescuelog -D"
# says unfinished, the destination (read back by qemu-img) holds the
# source's bytes wherever FILE says they were copied, and FILE still marks
# done everything the previous FILE did (a resumed run never forgets).
# The rerun without a kill: -v says "resuming with N bytes done" (N: FILE's
# done bytes; nothing to round at alignment 1), FILE then says finished,
# the destination equals the source (read back by qemu-img), and nbdkit's
# log filter on the source shows the rerun read no byte FILE marked done
# (beyond the fingerprint and destination samples every run reads first),
# and less than a whole copy reads.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd nbdkit qemu-img qemu-nbd pgrep setsid

size=$((16 * MiB))
make_test_file "$T/src.img" "$size"  # per MiB: data, a hole, allocated zeroes, a hole
export NBDCOPY_CHECKPOINT_SECONDS=0.15
extras=(0 0.08 0.16 0.25)

# What a whole copy reads from the source (holes are not read).
start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/full.reads"
run_copy "$(uri_for src)" "$T/full.img"
full_read=$(log_sum "$T/full.reads" Read)
msg "a whole copy reads $full_read of $size bytes"
((full_read > 0 && full_read < size)) || fail "a whole copy read $full_read bytes"

# read_destination KIND NAME: READBACK is a file of the destination's bytes:
# read back by qemu-img into $T/readback.raw, or the destination file
# itself.
read_destination() {
    READBACK=$T/readback.raw
    case $1 in
    file) READBACK=$T/$2.img ;;
    memory) nbd_to_file "$(uri_for dst)" "$size" "$READBACK" ;;
    qcow2) qcow2_to_file "$T/$2.qcow2" "$READBACK" ;;
    esac
}

run_case() { # NAME KIND ENGINE-OPTIONS...
    local name=$1 kind=$2 map=$T/$1.map dst=()
    shift 2
    case $kind in
    file) dst=("$T/$name.img") ;;
    memory)
        stop_server dst
        start_nbdkit dst memory size="$size"
        dst=("$(uri_for dst)")
        ;;
    qcow2)
        qemu-img create -q -f qcow2 "$T/$name.qcow2" "$size" || fail "qemu-img create failed"
        dst=("[" qemu-nbd -f qcow2 "$T/$name.qcow2" "]")
        ;;
    esac
    local args=("$@" --checkpoint="$map" -- "$(uri_for src)" "${dst[@]}")
    msg "$name: nbdcopy ${args[*]}"

    # (One python start per kill checks FILE, the destination and what
    # the previous FILE marked done: assert_map's further sub-commands.)
    local extra killed=0 whom=copier previous checked="" more
    for extra in "${extras[@]}"; do
        previous=
        if [[ -f $map ]]; then
            cp "$map" "$T/previous.map"
            previous=$T/previous.map
        fi
        kill_after_checkpoint "$map" "$extra" "$whom" --rate=1M --request-size=128K "${args[@]}"
        if [[ $KILL_RC -eq 0 ]]; then
            msg "  $name: the copy finished before kill $((killed + 1))"
            checked=
            break
        fi
        killed=$((killed + 1))
        read_destination "$kind" "$name"
        more=(";" holds "$map" "$T/src.img" "$READBACK")
        [[ -z $previous ]] || more+=(";" lost "$map" "$previous")
        assert_map "$map" "$name: after kill $killed" "${more[@]}"
        checked=1
        assert_map_done_status "$map" "$name: after kill $killed"
        msg "  $name: $whom killed $extra s after a checkpoint: $MAP_DONE of $size bytes done in $MAP_RUNS runs"
        ((MAP_DONE > 0)) || fail "$name: kill $killed: FILE marks nothing done after a checkpoint"
        [[ ${MAP_MORE[0]} -eq -1 ]] ||
            fail "$name: kill $killed: FILE marks offset ${MAP_MORE[0]} done, the destination differs there"
        if [[ -n $previous ]]; then
            [[ ${MAP_MORE[1]} -eq 0 ]] ||
                fail "$name: kill $killed: ${MAP_MORE[1]} bytes done before are no longer done"
        fi
        [[ $whom == copier ]] && whom=group || whom=copier
    done
    ((killed >= 3)) || fail "$name: the copy was killed only $killed times before it finished"

    # The rerun, from a source with a fresh log.  (FILE as the last kill
    # left it was checked just above; a FILE the copy finished was not.)
    local before=$T/$name.before done_before
    cp "$map" "$before"
    [[ -n $checked ]] || assert_map "$before" "$name: before the rerun"
    done_before=$MAP_DONE
    stop_server src
    start_nbdkit src -r --filter=log file "$T/src.img" logfile="$T/$name.reads"
    run_copy -v "${args[@]}"
    grep -qxF "nbdcopy: checkpoint=$map: resuming with $done_before bytes done" "$T/cmd.err" ||
        fail "$name: -v does not say 'resuming with $done_before bytes done': $(grep resuming "$T/cmd.err")"
    assert_map "$map" "$name: after the rerun" ";" reads "$before" "$T/$name.reads" 1
    [[ $MAP_DONE -eq $size && $MAP_RUNS -eq 1 ]] ||
        fail "$name: after the rerun FILE marks $MAP_DONE of $size bytes done"
    assert_map_done_status "$map" "$name: after the rerun"

    read_destination "$kind" "$name"
    assert_same_file "$T/src.img" "$READBACK" "$name"

    local sampled copies copied inside
    read -r sampled copies copied inside <<<"${MAP_MORE[0]}"
    msg "  $name: the rerun read $copied bytes in $copies requests (and $sampled samples)"
    [[ $inside -eq 0 ]] || fail "$name: the rerun read $inside bytes FILE marked done"
    ((copied < full_read)) ||
        fail "$name: the rerun read $copied bytes, a whole copy reads $full_read"
    ((copied <= size - done_before)) ||
        fail "$name: the rerun read $copied bytes, only $((size - done_before)) were not done"
}

run_case file-parallel file
run_case file-synchronous file --synchronous
run_case memory-parallel memory
run_case memory-synchronous memory --synchronous
run_case qcow2-parallel qcow2
run_case qcow2-synchronous qcow2 --synchronous
msg PASS
