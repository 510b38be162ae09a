#!/usr/bin/env bash
# How many tests ctest runs at once (scripts/test.sh, scripts/sanitize.sh):
# NBDCOPY_TEST_JOBS, else 4 per core. Most end-to-end tests wait (for a
# server, a silence limit, a --rate) far more than they compute; the few
# that keep cores busy say so ("# processors: N", tests/CMakeLists.txt).
echo "${NBDCOPY_TEST_JOBS:-$(($(nproc) * 4))}"
