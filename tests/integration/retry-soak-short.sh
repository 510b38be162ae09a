#!/usr/bin/env bash
# The long-copy soak (scripts/soak_long.sh), short: 20 randomized copies
# (4 soaks of 5 side by side)
# of 4 to 6 MiB (a run without faults takes at most 1.2 s) with
# --checkpoint and --retry, SIGKILLed at random moments, their connections
# dropped at random (drop_proxy.py in front of the source, the destination
# or both, some while they negotiate), their servers (nbdkit file,
# qemu-nbd raw and qcow2, nbd-server; nbdkit behind a writeback cache as
# the destination; over TCP, a Unix socket or TLS-PSK) killed and
# restarted on the same address, each rerun with the same command until it
# finishes.
# Every copy must end identical to the source: any corrupt, hung, crashed,
# mute or needlessly failed copy, or one that never finished, fails the
# test with its TSV line (the last column replays it).  A server that
# died on its own (nbdkit 1.32.5 aborts at times when its clients vanish)
# is not ours: reported, not failed.
# SOAK_SEED picks another seed (default 1). Label soak: the sanitizer
# runs leave it out (scripts/sanitize.sh): its copies are timed by their
# --rate and kills, and the retry and checkpoint matrix tests drive the
# same code under ASan deterministically.
# labels: soak
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-nbd qemu-img python3
repo=$(cd "$TEST_LIB/../../.." && pwd)
seed=${SOAK_SEED:-1}

# The 20 copies (seeds seed*10000+1..20, those of "-n 20 -s seed") run
# in 4 soaks side by side, 5 copies each: a copy mostly waits (its --rate,
# its kills and restarts), and each soak has its own servers, ports and
# directory.  Their results are joined into one table, numbered 1..20.
parts=4 per=5 pids=() rc=0
for ((p = 0; p < parts; p++)); do
    seeds=()
    for ((i = p * per + 1; i <= (p + 1) * per; i++)); do seeds+=($((seed * 10000 + i))); done
    NBDCOPY=$(command -v "$NBDCOPY") \
        bash "$repo/scripts/soak_long.sh" -c "$(IFS=,; echo "${seeds[*]}")" -m 6 -d 1200 \
        -o "$T/soak$p.tsv" >"$T/soak$p.md" 2>"$T/soak$p.err" &
    pids+=($!)
done
short=()
for p in "${!pids[@]}"; do
    prc=0
    wait "${pids[p]}" || prc=$?
    ((prc == 0)) || rc=$prc
    cat "$T/soak$p.md" >&2
    [[ -s $T/soak$p.tsv ]] || { tail -n 20 "$T/soak$p.err" >&2; fail "soak $p wrote no results (exit status $prc)"; }
    # A soak that stopped early says why in its own log (its ERR trap's
    # "error: line N"), not in the last soak's.
    ran=$(($(wc -l <"$T/soak$p.tsv") - 1))
    if ((ran != per)); then
        msg "soak $p (exit status $prc) ran $ran copies of $per; its log ends:"
        tail -n 20 "$T/soak$p.err" | sed 's/^/    /' >&2
        short+=("$p")
    fi
done
head -n 1 "$T/soak0.tsv" >"$T/soak.tsv"
for ((p = 0; p < parts; p++)); do tail -n +2 "$T/soak$p.tsv"; done |
    awk -F'\t' -v OFS='\t' '{ $1 = NR; print }' >>"$T/soak.tsv"
cat "$T"/soak?.err >"$T/soak.err"
copies=$(($(wc -l <"$T/soak.tsv") - 1))
[[ $copies -eq 20 ]] || fail "the soak ran $copies copies of 20 (soaks that stopped early: ${short[*]}, logs above)"

# Column 3 is the outcome.
bad=$(awk -F'\t' 'NR > 1 && $3 != "correct" && $3 != "server-crash"' "$T/soak.tsv")
if [[ -n $bad ]]; then
    printf '%s\n' "$bad" | sed 's/^/    /' >&2
    for f in "$T"/soak?.failures/*/run*.err; do
        [[ -s $f ]] && sed "s|^|    ${f#"$T"/}: |" "$f" | head -n 5 >&2
    done
    fail "$(printf '%s\n' "$bad" | wc -l) of 20 copies were not correct (replay with the last column)"
fi
[[ $rc -eq 0 ]] || fail "the soak exited $rc with every copy correct: $(tail -n 3 "$T/soak.err")"
crashes=$(awk -F'\t' 'NR > 1 && $3 == "server-crash"' "$T/soak.tsv" | cut -f2,11)
if [[ -n $crashes ]]; then
    msg "servers died on their own (not nbdcopy's fault) in these copies:"
    printf '%s\n' "$crashes" | sed 's/^/    /' >&2
fi
msg "PASS: seed $seed, $(grep -c $'\tcorrect\t' "$T/soak.tsv") correct copies, $(grep -c $'\tserver-crash\t' "$T/soak.tsv" || true) with a server crash"
