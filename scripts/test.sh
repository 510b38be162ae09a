#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs the whole test suite:
# unit tests and end-to-end tests against real nbdkit / qemu-nbd servers.
# Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j2 "$@"
