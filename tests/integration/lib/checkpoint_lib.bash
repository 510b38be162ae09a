# Helpers for the checkpoint-*.sh tests (--checkpoint=FILE, a GNU ddrescue
# mapfile).  Source after lib.sh.  The file is read by checkpoint_tool.py
# (our own parser), by ddrescuelog and, in the polls, by the shell itself,
# never by the binary under test.

# The globals set here (MAP_..., CTOOL) are for the tests.
# shellcheck disable=SC2034

require_cmd ddrescuelog

# ctool ARGS...: checkpoint_tool.py (see its header for the sub-commands;
# several, separated by ";" arguments, run in one python start).  (-S: no
# site module, the standard library is all it needs: a quarter less CPU
# per start.)
ctool() {
    local py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3)
    "$py" -S "$TEST_LIB/checkpoint_tool.py" "$@"
}

# ctool_lines ARGS...: ctool ARGS, which must succeed; its output lines
# (one per sub-command) in the array CTOOL.
ctool_lines() {
    local out
    out=$(ctool "$@" 2>&1) || fail "checkpoint_tool $*: $out"
    mapfile -t CTOOL <<<"$out"
}

# assert_map MAP WHAT [; SUB-COMMAND ARGS...]...: MAP is a whole checkpoint
# file (never empty nor partial): our parser accepts it and so does
# "ddrescuelog -t". Sets MAP_DONE (bytes marked done), MAP_SIZE and
# MAP_RUNS (done runs), and MAP_MORE: the lines of the further ctool
# sub-commands, run by the same python start (each ";" ARGS is one, e.g.
# '";" holds MAP SRC DST'; their failure fails WHAT too).
assert_map() {
    local map=$1 what=$2 out word jobs=0
    shift 2
    [[ -f $map ]] || fail "$what: $map does not exist"
    for word; do [[ $word != ";" ]] || jobs=$((jobs + 1)); done
    out=$(ctool check "$map" "$@" 2>&1) || fail "$what: $out"
    mapfile -t MAP_MORE <<<"$out"
    ((${#MAP_MORE[@]} == jobs + 1)) || fail "$what: checkpoint_tool said: $out"
    read -r MAP_DONE MAP_SIZE MAP_RUNS <<<"${MAP_MORE[0]}"
    MAP_MORE=("${MAP_MORE[@]:1}")
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

# _map_done MAP: sets MAP_NOW to the bytes MAP marks done, or -1 when it
# is not there (or not readable as a whole file: the polls treat that as
# "no progress", assert_map reports it).  Read and summed by the shell
# itself, no process started: the polls run it 50 times a second, and a
# busy machine starves a loop of forks.  (A looser reading than
# checkpoint_tool.py's: the header, the size, contiguous blocks from 0 to
# the size, a final newline.)
_map_done() {
    local line map_lines=() pos=0 size=-1 sum=0 status=
    local block='^(0x[0-9A-Fa-f]+)[[:space:]]+(0x[0-9A-Fa-f]+)[[:space:]]+([+?])[[:space:]]*$'
    MAP_NOW=-1
    mapfile map_lines 2>/dev/null <"$1" || return 0
    [[ ${map_lines[0]:-} == "# Mapfile. Created by nbdcopy"* && ${map_lines[-1]} == *$'\n' ]] ||
        return 0
    for line in "${map_lines[@]%$'\n'}"; do
        if [[ $line == "#"* ]]; then
            [[ $line =~ ^#\ nbdcopy-size:\ ([0-9]+)$ ]] && size=${BASH_REMATCH[1]}
            continue
        fi
        [[ -n ${line//[[:space:]]/} ]] || continue
        if [[ -z $status ]]; then
            status=$line
            continue
        fi
        [[ $line =~ $block ]] || return 0
        ((BASH_REMATCH[1] == pos && BASH_REMATCH[2] > 0)) || return 0
        pos=$((pos + BASH_REMATCH[2]))
        [[ ${BASH_REMATCH[3]} == "?" ]] || sum=$((sum + BASH_REMATCH[2]))
    done
    ((pos == size)) || return 0
    MAP_NOW=$sum
}

# _group_alive PGID: a thread of the group's processes still runs. Each
# thread counts: SIGKILLed, a multi-threaded server's main thread can be a
# zombie while another is still ending its I/O, and that thread still holds
# the process's files (qemu-nbd's image lock: qemu-img then fails to open
# the image). Zombies, which a slow subreaper may leave for a while, do not
# count. When not even a zombie is left, kill -0 says so without a fork.
_group_alive() {
    local p t
    kill -0 -- "-$1" 2>/dev/null || return 1
    for p in $(pgrep -g "$1"); do
        for t in /proc/"$p"/task/*; do
            _alive "${t##*/}" && return 0
        done
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
    local map=$1 extra=$2 whom=$3 before pid i
    shift 3
    _map_done "$map"
    before=$MAP_NOW
    ((before >= 0)) || before=0
    MAP_NOW=-1
    setsid "$NBDCOPY" "$@" 2>"$T/kill.err" &
    pid=$!
    # FILE is read 50 times a second by the shell (_map_done: under a
    # millisecond, so the copy cannot run to its end while it is read).
    for ((i = 0; i < 3000; i++)); do
        _alive "$pid" || break
        _map_done "$map"
        ((MAP_NOW > before)) && break
        nap 0.02
    done
    if _alive "$pid"; then
        ((MAP_NOW > before)) || { kill -9 -- "-$pid"; fail "no checkpoint in 60 s: nbdcopy $*"; }
        nap "$extra"
        if [[ $whom == group ]]; then
            kill -9 -- "-$pid" 2>/dev/null || true
        else
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    KILL_RC=0
    wait "$pid" 2>/dev/null || KILL_RC=$?  # (no "Killed" line from bash)
    for ((i = 0; i < 300; i++)); do
        _group_alive "$pid" || break
        nap 0.05
    done
    if _group_alive "$pid"; then
        kill -9 -- "-$pid" 2>/dev/null || true
        fail "the process group of the killed nbdcopy outlived it by 15 s"
    fi
    [[ $KILL_RC -eq 137 || $KILL_RC -eq 0 ]] ||
        fail "nbdcopy exited $KILL_RC before it was killed: $(head -c 300 "$T/kill.err"): nbdcopy $*"
}

# json_field FILE EXPR: EXPR (Python) evaluated with `r` the --json report
# in FILE (ctool's json sub-command: ctool_lines evaluates several at once).
json_field() {
    ctool json "$1" "$2" || fail "cannot evaluate $2 on $(head -c 500 "$1")"
}
