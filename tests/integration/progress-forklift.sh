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

# libnbd's nbdcopy draws a frame each time a worker takes its next 128 MiB:
# 1 GiB gives it eight. 1024 reads of 1 MiB, each delayed 2 ms, one at a
# time: about 3 s, several of our one-a-second lines.
size=$((1024 * MiB))
start_nbdkit src -r --filter=delay --filter=error pattern "$size" delay-read=2ms \
    error-pread-rate=100% error-file="$T/fail-now"
slow=(-C 1 --requests=1 --request-size=1048576)

# run_case COPIER terminal|pipe|file ok|fail OUT: the copy's stderr in OUT.
run_case() {
    local copier=$1 where=$2 outcome=$3 out=$4 rc=0 pid
    rm -f "$T/fail-now" "$T/dst.img"
    local cmd=("$copier" -p "${slow[@]}" "$(uri_for src)" "$T/dst.img")
    if [[ $where == terminal ]]; then
        local touch=()
        [[ $outcome == fail ]] && touch=(--touch-after '[1-9][0-9]?% \[' "$T/fail-now")
        pty_run --columns 100 "${touch[@]}" "$out" "${cmd[@]}" || rc=$?
    else
        if [[ $where == pipe ]]; then
            "${cmd[@]}" 2> >(cat >"$out") &
        else
            "${cmd[@]}" 2>"$out" &
        fi
        pid=$!
        if [[ $outcome == fail ]]; then
            for _ in $(seq 300); do
                grep -aqE '[1-9][0-9]?% \[' "$out" 2>/dev/null && break
                sleep 0.05
            done
            touch "$T/fail-now"
        fi
        wait "$pid" || rc=$?
        sleep 0.2 # the pipe's reader may still be writing
    fi
    if [[ $outcome == ok ]]; then
        [[ $rc -eq 0 ]] || fail "$copier ($where) exited $rc: $(tr '\r' '\n' <"$out" | tail -3)"
        qemu-img compare -q -f raw -F raw "$T/dst.img" "$(uri_for src)" ||
            fail "$copier ($where): the copy differs from the source"
    else
        [[ $rc -ne 0 ]] || fail "$copier ($where): a failing copy exited 0"
    fi
}

# check COPIER WHERE OUT: the percents rise, end at 100, and 100 comes once.
check_ok() {
    local what="$1 ($2)" out=$3 mode=()
    [[ $2 == terminal ]] && mode=(--frames)
    forklift "${mode[@]}" "$out" >"$T/percents" || fail "$what: frames Forklift cannot read"
    local count prev=-1 p
    count=$(wc -l <"$T/percents")
    ((count >= 3)) || fail "$what: only $count frames: $(tr '\r' '\n' <"$out")"
    while read -r p; do
        ((p >= prev)) || fail "$what: percent went back from $prev to $p"
        prev=$p
    done <"$T/percents"
    [[ $prev -eq 100 ]] || fail "$what: the last frame says $prev%, not 100%"
    [[ $(grep -cx 100 "$T/percents") -eq 1 ]] || fail "$what: 100% said more than once"
    # And line by line, as Forklift reads a terminal's capture too.
    [[ $(forklift "$out" | tail -n 1) -eq 100 ]] || fail "$what: Forklift's last percent is not 100"
    msg "$what: $count frames, $(head -n 1 "$T/percents")% .. 100%"
}

check_failed() {
    local what="$1 ($2)" out=$3 mode=() last
    [[ $2 == terminal ]] && mode=(--frames)
    forklift "${mode[@]}" "$out" >"$T/percents" || fail "$what: frames Forklift cannot read"
    last=$(tail -n 1 "$T/percents")
    [[ -n $last ]] || fail "$what: no frame before the failure"
    ((last < 100)) || fail "$what: a failed copy's last frame says $last%"
    ! grep -qx 100 "$T/percents" || fail "$what: a failed copy said 100%"
    msg "$what: failed at $last%"
}

for where in terminal pipe file; do
    msg "ours, stderr a $where"
    run_case "$NBDCOPY" "$where" ok "$T/$where.txt"
    check_ok ours "$where" "$T/$where.txt"
    if [[ $where != terminal ]]; then
        grep -q $'\r' "$T/$where.txt" && fail "ours ($where): carriage returns off a terminal"
    fi
    run_case "$NBDCOPY" "$where" fail "$T/$where-fail.txt"
    check_failed ours "$where" "$T/$where-fail.txt"
    last_line=$(tr '\r' '\n' <"$T/$where-fail.txt" | grep -a 'nbdcopy:' | tail -n 1)
    [[ $last_line == *"nbdcopy: "*"read"*"Input/output error"* ]] ||
        fail "ours ($where): the failure's message is not a read error: '$last_line'"
done

reference=/usr/bin/nbdcopy
if [[ -x $reference ]]; then
    version=$("$reference" --version | awk 'NR == 1 {print $2}')
    wheres=(terminal)
    if [[ $(printf '%s\n' 1.16 "$version" | sort -V | head -n 1) == 1.16 ]]; then
        wheres+=(pipe file)
    else
        msg "reference nbdcopy $version writes its bar to /dev/tty, not stderr: terminal case only"
    fi
    for where in "${wheres[@]}"; do
        msg "reference, stderr a $where"
        run_case "$reference" "$where" ok "$T/ref-$where.txt"
        check_ok reference "$where" "$T/ref-$where.txt"
        run_case "$reference" "$where" fail "$T/ref-$where-fail.txt"
        check_failed reference "$where" "$T/ref-$where-fail.txt"
    done
else
    msg "no $reference: the reference runs are skipped"
fi
msg PASS
