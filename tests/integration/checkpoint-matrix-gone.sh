#!/usr/bin/env bash
# --checkpoint with --retry against real servers gone for longer than the
# retries last (issue 21's matrix, its "gone" cells): a copy with
# --checkpoint=FILE --retry=2 (checkpoints every 0.3 s), paced by --rate,
# whose server is SIGKILLed once FILE marks something done and not
# started again: the copy fails with one line "nbdcopy: URI: OPERATION at
# offset O length L: the connection was lost (REASON) and could not be
# re-established in 2 attempts (--retry=2): WHY", --json has that error,
# exit status 1 and no reconnection; wherever FILE marks the copy done,
# the destination already holds the source's bytes (for a writeback
# destination, that is its file after the kill lost every write it had
# not flushed: FILE marks only what was flushed).  Then the server is
# started again on the same address and the same command is run again: it
# resumes (-v: "resuming with N bytes done", N what FILE marked), makes no
# reconnection, FILE ends all done, and the copy is identical to the
# source; its --checksum is the whole source's sha256sum (the done ranges
# read again to hash them).  Cells (matrix_lib.bash):
#
#   qemu-raw/unix/gone/multi/src           qemu-nbd, a source, Unix socket
#   qemu-qcow2/tls/gone/default/src        qemu-nbd qcow2, TLS (PSK) on TCP
#   nbdkit-writeback/tcp/gone/C1/dst       nbdkit's writeback cache: the
#                                          kill loses its unflushed writes
#   nbd-server/tcp/gone/sync/dst           nbd-server, --synchronous
#   nbdkit-writeback/unix/crash/multi/dst  nbdcopy itself SIGKILLed after a
#                                          checkpoint, and its writeback
#                                          destination with it (a power
#                                          cut): the rerun resumes the same
#
# Longer outages and the other combinations are left to the soak
# (scripts/soak*.sh).
# labels: retry tls
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/proxy_lib.bash"
source "$TEST_LIB/retry_lib.bash"
source "$TEST_LIB/servers_lib.bash"
source "$TEST_LIB/matrix_lib.bash"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd qemu-nbd qemu-img nbdkit nbd-server timeout ss setsid pgrep
make_psk
export NBDCOPY_CHECKPOINT_SECONDS=0.3

matrix_data $((24 * MiB))
size=$MATRIX_SIZE

# wait_checkpoint MAP: wait until MAP marks something done (60 s at most)
# while the background copy runs; then the server is frozen (SIGSTOP), so
# that the copy cannot end before the cell kills it.  (MAP is read by the
# shell, _map_done: no process per poll.)
wait_checkpoint() {
    local i
    for ((i = 0; i < 1200; i++)); do
        _map_done "$1"
        if ((MAP_NOW > 0)); then
            freeze_server srv
            return 0
        fi
        _alive "$BG_PID" || cell_fail "the copy ended before its first checkpoint: $(copy_error "$CELL_LABEL")"
        nap 0.05
    done
    cell_fail "no checkpoint within 60 s"
}

# destination_image: the raw bytes of the cell's destination now, in
# $T/dst-now.img (the server is dead: its files are read directly).
destination_image() {
    rm -f "$T/dst-now.img"
    if [[ $CELL_SIDE == src ]]; then
        cp "$T/out.img" "$T/dst-now.img"
    elif [[ $CELL_KIND == qemu-qcow2 ]]; then
        qemu-img convert -f qcow2 -O raw "$T/dst.qcow2" "$T/dst-now.img" ||
            cell_fail "qemu-img cannot read the qcow2 destination left by the killed server"
    else
        cp "$T/dst.img" "$T/dst-now.img"
    fi
    truncate -s "$size" "$T/dst-now.img"
}

# assert_checked_map MAP WHAT: assert_map, and wherever MAP marks the copy
# done, the destination (as it is now) holds the source's bytes (checked
# by the same python start).
assert_checked_map() {
    local source=$T/src.img at
    [[ $CELL_SIDE == dst ]] && source=$T/wsrc.img
    destination_image
    assert_map "$1" "$2" ";" holds "$1" "$source" "$T/dst-now.img"
    at=${MAP_MORE[0]}
    [[ $at == -1 ]] ||
        cell_fail "$1 marks offset $at done, but the destination differs from the source there"
}

# resume_cell ARGS...: the server back on its address, the same command
# run again resumes from the checkpoint CELL_MAP (which marked DONE_BEFORE
# bytes) and finishes identical.
resume_cell() {
    restart_server srv
    retry_copy "$CELL_LABEL-again" -v "$@"
    if [[ $RC -ne 0 ]]; then
        assert_server_alive srv "cell $CELL (the rerun)"
        cell_fail "the rerun failed (exit status $RC): $(copy_error "$CELL_LABEL-again")"
    fi
    grep -qxF "nbdcopy: checkpoint=$CELL_MAP: resuming with $DONE_BEFORE bytes done" "$T/$CELL_LABEL-again.err" ||
        cell_fail "the rerun does not say 'resuming with $DONE_BEFORE bytes done': $(grep -m1 resuming "$T/$CELL_LABEL-again.err" || echo nothing)"
    assert_no_reconnect "$CELL_LABEL-again"
    assert_map "$CELL_MAP" "cell $CELL: the map after the rerun"
    [[ $MAP_DONE -eq $size ]] || cell_fail "after the rerun $CELL_MAP marks $MAP_DONE of $size bytes done"
    cell_identical "$CELL_LABEL-again"
    msg "cell $CELL: resumed with $DONE_BEFORE of $size bytes done, identical, the whole source's sha256sum"
}

# gone_cell KIND TRANSPORT ENGINE SIDE: the server killed for good.
gone_cell() {
    local kind=$1 transport=$2 engine=$3 side=$4
    cell_begin "$kind" "$transport" gone "$engine" "$side"
    cell_operands "$SERVER_URI"
    CELL_MAP=$T/$CELL_LABEL.map
    local rate=$((size * 2 / 3)) uri=$SERVER_URI
    [[ $side == src ]] && rate=$((size * 2 / 5))
    local args=(--checkpoint="$CELL_MAP" --retry=2 --rate="$rate" --request-size=256K --checksum
        "${ENGINE_OPTS[@]}" "${OPERANDS[@]}")
    start_bg_copy "$CELL_LABEL" "${args[@]}"
    wait_checkpoint "$CELL_MAP"
    assert_server_alive srv "cell $CELL"
    kill_server srv
    finish_bg_copy "$CELL_LABEL"
    [[ $RC -ne 0 ]] || cell_fail "the copy succeeded although its server was killed for good"
    local op='(read|write|zero|flush|extents)( at offset [0-9]+ length [0-9]+)?'
    [[ $side == src ]] && op='(read|extents) at offset [0-9]+ length [0-9]+'
    assert_one_line_failure "$CELL_LABEL" \
        "^nbdcopy: $(re_quote "$uri"): $op: the connection was lost \(.+\) and could not be re-established in 2 attempts \(--retry=2\): .+\$"
    # (Both fields in one python start: retry_json's evaluation, batched.)
    [[ -s $T/$CELL_LABEL.json ]] || cell_fail "no --json report ($T/$CELL_LABEL.json)"
    ctool_lines json "$T/$CELL_LABEL.json" '(r["exit_status"], r["reconnections"])' \
        ";" json "$T/$CELL_LABEL.json" 'r["error"]'
    [[ ${CTOOL[0]} == "(1, 0)" ]] || cell_fail "--json: $(cat "$T/$CELL_LABEL.json")"
    [[ ${CTOOL[1]} == "${ERR#nbdcopy: }" ]] ||
        cell_fail "--json's error is not the message: ${CTOOL[1]}"
    assert_checked_map "$CELL_MAP" "cell $CELL: the map of the failed run"
    DONE_BEFORE=$MAP_DONE
    ((DONE_BEFORE > 0 && DONE_BEFORE < size)) ||
        cell_fail "the failed run's map marks $DONE_BEFORE of $size bytes done"
    resume_cell "${args[@]}"
}

# crash_cell KIND TRANSPORT ENGINE: nbdcopy SIGKILLed after a checkpoint,
# then its destination server (a power cut of both), both started again.
crash_cell() {
    local kind=$1 transport=$2 engine=$3
    cell_begin "$kind" "$transport" crash "$engine" dst
    cell_operands "$SERVER_URI"
    CELL_MAP=$T/$CELL_LABEL.map
    local args=(--checkpoint="$CELL_MAP" --retry=2 --rate=$((size * 2 / 3)) --request-size=256K
        --checksum "${ENGINE_OPTS[@]}" "${OPERANDS[@]}")
    kill_after_checkpoint "$CELL_MAP" 0.1 copier "${args[@]}"
    [[ $KILL_RC -eq 137 ]] || cell_fail "the copy finished before it could be killed"
    assert_server_alive srv "cell $CELL"
    kill_server srv
    assert_checked_map "$CELL_MAP" "cell $CELL: the map of the killed run"
    DONE_BEFORE=$MAP_DONE
    ((DONE_BEFORE > 0 && DONE_BEFORE < size)) ||
        cell_fail "the killed run's map marks $DONE_BEFORE of $size bytes done"
    resume_cell "${args[@]}"
}

gone_cell qemu-raw unix multi src
gone_cell qemu-qcow2 tls default src
gone_cell nbdkit-writeback tcp C1 dst
gone_cell nbd-server tcp sync dst
crash_cell nbdkit-writeback unix multi
msg PASS
