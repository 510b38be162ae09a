#!/usr/bin/env bash
# Builds and runs the sanitizer checks (clang-14; scripts/setup.sh installs it):
#   asan  the whole suite (unit + end-to-end) under AddressSanitizer, UBSan and
#         LeakSanitizer in build-asan/, plus a short run of every fuzz target
#         (but the randomized soak, label soak, which runs in the plain build)
#   tsan  the engine unit tests and the multi-connection end-to-end tests
#         under ThreadSanitizer in build-tsan/
# Reports go to files (log_path), not to the tests' stderr, so a test that
# expects a failure cannot swallow one: after ctest, any report fails the
# run and is printed.
# Usage: scripts/sanitize.sh [asan|tsan]...     (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)

# What TSan runs: every unit test (the sanitizer presets make them one
# process, "unit_tests": the engines, blkhash's combiner, the --rate
# limiter, cancellation, checkpoints, the watchdog of TLS handshakes), and
# end-to-end tests with several connections or workers, or signals
# arriving mid-copy, reconnects (--retry), helper connections that fail to
# open, and checkpoints.
tsan_tests='^unit_tests$|^(engine-multi-conn|option-rate|retry-drop-source|retry-drop-destination|option-connections|copy-nbd-to-nbd|engine-failures|blkhash-copy-then-checksum|verify-passes|signals-interrupt|engine-costly-extents|retry-helper-connection-fails|checksum-reads-out-of-order|salvage-nbd-bad-areas)$'

reports=$(mktemp -d /tmp/sanitizer-reports.XXXXXX)
trap 'rm -rf "$reports"' EXIT
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan"

check_reports() { # MODE
  local found=0 f
  for f in "$reports"/*; do
    [[ -e $f ]] || continue
    found=1
    echo "=== sanitizer report $(basename "$f") ===" >&2
    head -n 80 "$f" >&2
  done
  if ((found)); then
    echo "sanitize: $1: sanitizer reports above" >&2
    return 1
  fi
}

status=0
for mode in "${modes[@]}"; do
  case $mode in
    asan | tsan) ;;
    *) echo "usage: scripts/sanitize.sh [asan|tsan]..." >&2; exit 2 ;;
  esac
  echo "sanitize: building build-$mode"
  launcher=()
  # (As scripts/setup.sh: paths relative to the checkout, for fresh clones.)
  command -v ccache >/dev/null 2>&1 &&
    launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache")
  cmake --preset "$mode" "${launcher[@]}" >/dev/null
  cmake --build --preset "$mode"
  # The randomized soak (label soak) runs in the plain build only: see
  # tests/integration/retry-soak-short.sh.
  filter=(-LE soak)
  [[ $mode == tsan ]] && filter=(-R "$tsan_tests")
  echo "sanitize: running the $mode tests"
  ctest --test-dir "build-$mode" --output-on-failure -j"$(scripts/test_jobs.sh)" "${filter[@]}" ||
    status=1
  check_reports "$mode" || status=1
  rm -rf "${reports:?}"/*
done
exit "$status"
