#!/usr/bin/env bash
# -p as programs read it: Forklift's monitor splits stderr into lines and
# matches each against the Go expression ".+ (\d+)% \[[*-]+\]"
# (forklift_progress.py applies it with Go's semantics). On a terminal, a
# pipe and a file, on a copy slow enough for several frames: every frame
# matches, the percents rise and end at 100, exactly one frame says 100;
# a copy whose source starts failing midway ends below 100. The same
# checks pass on libnbd's own nbdcopy (the reference), wherever it writes
# its frames to stderr (libnbd >= 1.16; older ones write to /dev/tty, so
# only the terminal case applies to them).
source "$(dirname "$0")/lib/lib.sh"
require_cmd python3
require_cmd qemu-img
pty_run() { /usr/bin/python3 "$TEST_LIB/pty_run.py" "$@"; }
forklift() { /usr/bin/python3 "$TEST_LIB/forklift_progress.py" "$@"; }

# Sources whose reads are slow, one at a time (-C 1, one request of 1 MiB
# in flight), that fail every read from the moment $T/fail-now exists.
# Ours draws a frame a second (and on a terminal at every percent): 128
# reads of 1 MiB, each delayed 24 ms, take about 3 s, several of our
# one-a-second lines. libnbd's nbdcopy draws a frame each time a worker
# takes its next 128 MiB: 1 GiB gives it eight, and 1024 reads of 1 MiB,
# each delayed 2 ms, take about as long. (Ours copies and compares an
# eighth of the reference's bytes: the frames are the same.)
start_source() { # NAME SIZE DELAY
    start_nbdkit "$1" -r --filter=delay --filter=error pattern "$2" delay-read="$3" \
        error-pread-rate=100% error-file="$T/fail-now"
}
start_source ours $((128 * MiB)) 24ms
slow=(-C 1 --requests=1 --request-size=1048576)

# run_case COPIER SERVER terminal|pipe|file ok|fail OUT: the copy's stderr
# in OUT.
run_case() {
    local copier=$1 server=$2 where=$3 outcome=$4 out=$5 rc=0 pid text i
    rm -f "$T/fail-now" "$T/dst.img"
    local cmd=("$copier" -p "${slow[@]}" "$(uri_for "$server")" "$T/dst.img")
    if [[ $where == terminal ]]; then
        local touch=()
        [[ $outcome == fail ]] && touch=(--touch-after '[1-9][0-9]?% \[' "$T/fail-now")
        pty_run --columns 100 "${touch[@]}" "$out" "${cmd[@]}" || rc=$?
    else
        if [[ $where == pipe ]]; then
            # The reader is in the job, so the wait below covers it: with
            # 2> >(cat) the wait was for nbdcopy alone, and a reader late
            # on a loaded machine had not yet written the last line.
            ("${cmd[@]}" 2>&1 >/dev/null | cat >"$out") &
        else
            "${cmd[@]}" 2>"$out" &
        fi
        pid=$!
        if [[ $outcome == fail ]]; then
            # Until a frame between 1% and 99% is out (read without a
            # fork: this polls 20 times a second).
            for ((i = 0; i < 300; i++)); do
                text=
                [[ -e $out ]] && { IFS= read -r -d '' text <"$out" || true; }
                [[ $text =~ [1-9][0-9]?%\ \[ ]] && break
                nap 0.05
            done
            touch "$T/fail-now"
        fi
        wait "$pid" || rc=$?
    fi
    if [[ $outcome == ok ]]; then
        [[ $rc -eq 0 ]] || fail "$copier ($where) exited $rc: $(tr '\r' '\n' <"$out" | tail -3)"
        qemu-img compare -q -f raw -F raw "$T/dst.img" "$(uri_for "$server")" ||
            fail "$copier ($where): the copy differs from the source"
    else
        [[ $rc -ne 0 ]] || fail "$copier ($where): a failing copy exited 0"
    fi
}

# read_percents WHERE OUT: PERCENTS, what Forklift reads in OUT (frame by
# frame on a terminal), and LAST, the last of them (empty if none); and
# LINES_LAST, the last percent read line by line, as Forklift reads a
# terminal's capture too (off a terminal that is how PERCENTS were read).
read_percents() {
    local mode=() lines=()
    [[ $1 == terminal ]] && mode=(--frames --lines-to "$T/lines")
    forklift "${mode[@]}" "$2" >"$T/percents" || return 1
    mapfile -t PERCENTS <"$T/percents"
    LAST='' LINES_LAST=''
    ((${#PERCENTS[@]} == 0)) || LAST=${PERCENTS[${#PERCENTS[@]} - 1]}
    if [[ $1 == terminal ]]; then
        mapfile -t lines <"$T/lines"
        ((${#lines[@]} == 0)) || LINES_LAST=${lines[${#lines[@]} - 1]}
    else
        LINES_LAST=$LAST
    fi
}

# check_ok COPIER WHERE OUT [READ-AS]: the percents rise, end at 100, and
# 100 comes once. READ-AS (default WHERE): terminal reads OUT frame by frame.
check_ok() {
    local what="$1 ($2)" out=$3 prev=-1 p hundreds=0
    read_percents "${4:-$2}" "$out" || fail "$what: frames Forklift cannot read"
    local count=${#PERCENTS[@]}
    ((count >= 3)) || fail "$what: only $count frames: $(tr '\r' '\n' <"$out")"
    for p in "${PERCENTS[@]}"; do
        ((p >= prev)) || fail "$what: percent went back from $prev to $p"
        prev=$p
        ((p != 100)) || hundreds=$((hundreds + 1))
    done
    [[ $prev -eq 100 ]] || fail "$what: the last frame says $prev%, not 100%"
    [[ $hundreds -eq 1 ]] || fail "$what: 100% said more than once"
    [[ $LINES_LAST -eq 100 ]] || fail "$what: Forklift's last percent is not 100"
    msg "$what: $count frames, ${PERCENTS[0]}% .. 100%"
}

check_failed() {
    local what="$1 ($2)" out=$3 last p
    read_percents "${4:-$2}" "$out" || fail "$what: frames Forklift cannot read"
    last=$LAST
    [[ -n $last ]] || fail "$what: no frame before the failure"
    ((last < 100)) || fail "$what: a failed copy's last frame says $last%"
    for p in "${PERCENTS[@]}"; do
        [[ $p != 100 ]] || fail "$what: a failed copy said 100%"
    done
    msg "$what: failed at $last%"
}

for where in terminal pipe file; do
    msg "ours, stderr a $where"
    run_case "$NBDCOPY" ours "$where" ok "$T/$where.txt"
    check_ok ours "$where" "$T/$where.txt"
    if [[ $where != terminal ]]; then
        grep -q $'\r' "$T/$where.txt" && fail "ours ($where): carriage returns off a terminal"
    fi
    run_case "$NBDCOPY" ours "$where" fail "$T/$where-fail.txt"
    check_failed ours "$where" "$T/$where-fail.txt"
    last_line=$(tr '\r' '\n' <"$T/$where-fail.txt" | grep -a 'nbdcopy:' | tail -n 1)
    [[ $last_line == *"nbdcopy: "*"read"*"Input/output error"* ]] ||
        fail "ours ($where): the failure's message is not a read error: '$last_line'"
done

reference=/usr/bin/nbdcopy
if [[ -x $reference ]]; then
    start_source ref $((1024 * MiB)) 2ms
    version=$("$reference" --version | awk 'NR == 1 {print $2}')
    wheres=(terminal)
    if [[ $(printf '%s\n' 1.16 "$version" | sort -V | head -n 1) == 1.16 ]]; then
        wheres+=(pipe file)
    else
        msg "reference nbdcopy $version writes its bar to /dev/tty, not stderr: terminal case only"
    fi
    # libnbd 1.22's nbdcopy draws the same carriage-return frames into a
    # pipe or a file as on a terminal (one line in all, ended at 100%):
    # Forklift, splitting lines, would see a single percent per copy. Its
    # frames are read as frames there, and the carriage returns asserted,
    # the difference from ours (one line a frame off a terminal).
    for where in "${wheres[@]}"; do
        msg "reference, stderr a $where"
        run_case "$reference" ref "$where" ok "$T/ref-$where.txt"
        if [[ $where != terminal ]]; then
            grep -q $'\r' "$T/ref-$where.txt" ||
                fail "reference ($where): no carriage returns: the frames are lines now, read them so"
        fi
        check_ok reference "$where" "$T/ref-$where.txt" terminal
        run_case "$reference" ref "$where" fail "$T/ref-$where-fail.txt"
        check_failed reference "$where" "$T/ref-$where-fail.txt" terminal
    done
else
    msg "no $reference: the reference runs are skipped"
fi
msg PASS
