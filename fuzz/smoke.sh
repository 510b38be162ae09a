#!/usr/bin/env bash
# A bounded libFuzzer run for ctest: replays every seed, then mutates for
# SECONDS. New inputs go to a temporary directory, never into the repo.
# A crash, leak, sanitizer report or failed check exits non-zero; the
# reproducer is left in $FUZZ_ARTIFACTS (default: a temporary directory).
# Usage: smoke.sh FUZZER SEED-DIR SECONDS
set -euo pipefail
fuzzer=$1 seeds=$2 seconds=$3
work=$(mktemp -d /tmp/fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
artifacts=${FUZZ_ARTIFACTS:-$work}
mkdir -p "$artifacts" "$work/new"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work/new" "$seeds" 2>"$work/log" || {
  rc=$?
  tail -n 60 "$work/log" >&2
  echo "fuzz: $(basename "$fuzzer") failed (status $rc); reproducer in $artifacts" >&2
  [[ $artifacts == "$work" ]] && trap - EXIT
  exit 1
}
grep -E '^(stat::number_of_executed_units|INFO: Loaded|#[0-9]+ *DONE)' "$work/log" >&2 || true
