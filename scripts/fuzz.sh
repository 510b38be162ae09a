#!/usr/bin/env bash
# Long libFuzzer runs (ASan + UBSan + LeakSanitizer), one target after the
# other, each from its seed corpus in fuzz/corpus/ plus a working corpus
# kept in build-asan/fuzz-work/ between runs. Prints each target's exec
# count; a failure leaves the reproducer in build-asan/fuzz-artifacts/ and
# makes the script exit non-zero. Replay one with: build-asan/fuzz/TARGET FILE
# Usage: scripts/fuzz.sh [-r RUNS | -t SECONDS] [TARGET...]
#   default: -r 1000000, every target (command_line_fuzzer,
#   endpoint_spec_fuzzer, blkhash_fuzzer, piece_planner_fuzzer, work_map_fuzzer)
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs=1000000)
while getopts "r:t:" flag; do
  case $flag in
    r) limit=(-runs="$OPTARG") ;;
    t) limit=(-max_total_time="$OPTARG") ;;
    *) echo "usage: scripts/fuzz.sh [-r RUNS | -t SECONDS] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
((${#targets[@]})) || targets=(command_line_fuzzer endpoint_spec_fuzzer blkhash_fuzzer piece_planner_fuzzer
  work_map_fuzzer checkpoint_file_fuzzer range_list_fuzzer)

cmake --preset asan >/dev/null
cmake --build --preset asan --target "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1
status=0
for target in "${targets[@]}"; do
  work=build-asan/fuzz-work/$target artifacts=build-asan/fuzz-artifacts/$target
  mkdir -p "$work" "$artifacts"
  log=build-asan/fuzz-work/$target.log
  start=$SECONDS
  if "build-asan/fuzz/$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$work" "fuzz/corpus/$target" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log and $artifacts/)"
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "fuzz: $target: ${execs:-?} executions in $((SECONDS - start)) s, $result"
done
exit "$status"
