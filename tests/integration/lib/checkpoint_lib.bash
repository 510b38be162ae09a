# Helpers for the checkpoint-*.sh tests (--checkpoint=FILE, a GNU ddrescue
# mapfile).  Source after lib.sh.  The file is read by checkpoint_tool.py
# (our own parser) and by ddrescuelog, never by the binary under test.

require_cmd ddrescuelog

# ctool ARGS...: checkpoint_tool.py (see its header for the sub-commands).
ctool() {
    local py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    "$py" "$TEST_LIB/checkpoint_tool.py" "$@"
}

# assert_map MAP WHAT: MAP is a whole checkpoint file (never empty nor
# partial): our parser accepts it and so does "ddrescuelog -t". Sets
# MAP_DONE (bytes marked done), MAP_SIZE and MAP_RUNS (done runs).
assert_map() {
    local map=$1 what=$2 out
    [[ -f $map ]] || fail "$what: $map does not exist"
    out=$(ctool check "$map" 2>&1) || fail "$what: $out"
    read -r MAP_DONE MAP_SIZE MAP_RUNS <<<"$out"
    ddrescuelog -t "$map" >"$T/ddrescuelog.out" 2>&1 ||
        fail "$what: ddrescuelog -t rejects $map: $(head -n 3 "$T/ddrescuelog.out")"
}

# assert_map_done_status MAP WHAT: "ddrescuelog -D" exits 0 exactly when
# MAP marks every byte done (after assert_map).
assert_map_done_status() {
    local rc=0
    ddrescuelog -D "$1" >/dev/null 2>&1 || rc=$?
    if ((MAP_DONE == MAP_SIZE)); then
        [[ $rc -eq 0 ]] || fail "$2: ddrescuelog -D exits $rc for a finished $1"
    else
        [[ $rc -ne 0 ]] || fail "$2: ddrescuelog -D exits 0 for $1 with $MAP_DONE of $MAP_SIZE done"
    fi
}

# _map_done MAP: bytes MAP marks done, or -1 when it is not there (or not
# readable as a whole file: the poll below treats that as "no progress",
# assert_map reports it).
_map_done() {
    local out
    out=$(ctool check "$1" 2>/dev/null) || { echo -1; return 0; }
    echo "${out%% *}"
}

# _group_alive PGID: a process of the group still runs (zombies, which a
# slow subreaper may leave for a while, do not count).
_group_alive() {
    local p
    for p in $(pgrep -g "$1"); do
        _alive "$p" && return 0
    done
    return 1
}

# kill_after_checkpoint MAP EXTRA WHOM ARGS...: runs nbdcopy ARGS in the
# background, in a process group of its own; waits (at most 60 s) until
# MAP marks more bytes done than it did before the run (a checkpoint of
# this run), then EXTRA seconds more, then sends SIGKILL to nbdcopy alone
# (WHOM "copier": a "[ CMD ]" server it started sees its client vanish)
# or to its whole process group (WHOM "group": that server dies with it,
# as in a crash); then waits for the rest of the group to be gone.  Sets
# KILL_RC: 137 when killed, 0 when the copy finished first; any other
# status fails.  nbdcopy's stderr is in $T/kill.err.
kill_after_checkpoint() {
    local map=$1 extra=$2 whom=$3 before pid i now=-1
    shift 3
    before=$(_map_done "$map")
    ((before >= 0)) || before=0
    rm -f "$T/kill.err"
    setsid "$NBDCOPY" "$@" 2>"$T/kill.err" &
    pid=$!
    # Cheap polling (a busy machine starves a loop of forks): FILE is
    # parsed only when it was replaced by a newer one (it is renamed over:
    # bash's -nt compares modification times, no fork).
    local seen=$T/.map-seen
    rm -f "$seen"
    if [[ -e $map ]]; then touch -r "$map" "$seen"; else touch -d @0 "$seen"; fi
    for i in $(seq 3000); do
        _alive "$pid" || break
        if [[ $map -nt $seen ]]; then
            # Stopped while the map is parsed (a python start, slow on a
            # loaded machine): the copy cannot run to its end meanwhile.
            kill -STOP -- "-$pid" 2>/dev/null || true
            touch -r "$map" "$seen" 2>/dev/null || true
            now=$(_map_done "$map")
            kill -CONT -- "-$pid" 2>/dev/null || true
            ((now > before)) && break
        fi
        sleep 0.02
    done
    if _alive "$pid"; then
        ((now > before)) || { kill -9 -- "-$pid"; fail "no checkpoint in 60 s: nbdcopy $*"; }
        sleep "$extra"
        if [[ $whom == group ]]; then
            kill -9 -- "-$pid" 2>/dev/null || true
        else
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    KILL_RC=0
    wait "$pid" 2>/dev/null || KILL_RC=$?  # (no "Killed" line from bash)
    for i in $(seq 300); do
        _group_alive "$pid" || break
        sleep 0.05
    done
    if _group_alive "$pid"; then
        kill -9 -- "-$pid" 2>/dev/null || true
        fail "the process group of the killed nbdcopy outlived it by 15 s"
    fi
    [[ $KILL_RC -eq 137 || $KILL_RC -eq 0 ]] ||
        fail "nbdcopy exited $KILL_RC before it was killed: $(head -c 300 "$T/kill.err"): nbdcopy $*"
}

# json_field FILE EXPR: EXPR (Python) evaluated with `r` the --json report
# in FILE.
json_field() {
    local py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    "$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$1" "$2" || fail "cannot evaluate $2 on $(head -c 500 "$1")"
}
