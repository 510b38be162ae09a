#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs the whole test suite:
# unit tests and end-to-end tests against real nbdkit / qemu-nbd servers,
# then the sanitizer runs (scripts/sanitize.sh): the whole suite again under
# ASan + UBSan + LeakSanitizer with a short run of every fuzz target, and
# the multi-threaded tests under TSan. Between them, the same suite in a
# Debian 13 root (scripts/debian13.sh). Any failure or sanitizer report
# fails it. NBDCOPY_SANITIZE=0 skips the sanitizer runs, NBDCOPY_DEBIAN13=0
# the Debian 13 one.
# Usage: scripts/test.sh [extra ctest arguments for the first run]
#        (ctest -L quick: the unit tests and a handful of copies, seconds)
# NBDCOPY_TEST_JOBS=N runs N tests at once (default: 4 per core).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh
# Several tests per core (scripts/test_jobs.sh): most of them wait.
ctest --test-dir build --output-on-failure -j"$(scripts/test_jobs.sh)" "$@"
# The same suite on Debian 13 (libnbd 1.22, nbdkit 1.42, qemu 10, GCC 14),
# in a cached debootstrap root: needs root, as CI has, and fails without it
# rather than pass. NBDCOPY_DEBIAN13=0 skips it.
if [[ ${NBDCOPY_DEBIAN13:-1} != 0 ]]; then
  scripts/debian13.sh "$@"
fi
if [[ ${NBDCOPY_SANITIZE:-1} != 0 ]]; then
  scripts/sanitize.sh asan tsan
fi
echo "test.sh: everything passed in $((SECONDS - start)) s"
