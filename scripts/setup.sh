#!/usr/bin/env bash
# Installs what the build, the tests and the benchmarks need (Debian 12
# packages only), then configures and builds into ./build.
# Usage: scripts/setup.sh          (run as root on a fresh machine, or with sudo)
#        scripts/setup.sh --demo   (scripts/demo.sh: what the build and the
#                                   demo need, and only the nbdcopy target)
set -euo pipefail
cd "$(dirname "$0")/.."
demo=false
[[ ${1:-} == --demo ]] && demo=true

# The build (configuring needs GoogleTest too: the tests are part of it),
# and what the demo runs.
packages=(
  build-essential cmake pkg-config
  libnbd-dev liburing-dev libcli11-dev libfmt-dev libgtest-dev libssl-dev nlohmann-json3-dev
  ccache  # every build (plain, asan, tsan) compiles through it when present
  nbdkit qemu-utils
)
$demo || packages+=(
  gnutls-bin libnbd-bin util-linux bash-completion man-db
  hyperfine gnuplot-nox time python3
  nbd-server  # a third NBD server for the retry/reconnect matrix (tests)
  gddrescue  # ddrescuelog reads the --checkpoint mapfile (tests)
  strace  # the system calls a copy makes (tests: copy-file-to-file-truncate)
  openssh-server netcat-openbsd  # a local sshd and the remote nc of nbd+ssh:// (tests)
  xfsprogs btrfs-progs e2fsprogs  # file systems that share blocks (reflink tests), filefrag
  clang-14 libclang-rt-14-dev libfuzzer-14-dev llvm-14  # sanitizers, fuzzing, symbolized reports
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# ccache (when present) for every build: scripts/sanitize.sh passes the same.
# Paths are hashed relative to the checkout (CCACHE_BASEDIR, and no hash of
# the build directory), so that a fresh clone elsewhere, as CI makes, hits
# the cache that the last one filled: 1 hit in 1100 compiles without.
# GCC builds with -Werror, as the clang sanitizer builds do: a warning fails CI.
launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache")
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNBDCOPY_WERROR=ON "${launcher[@]}" >/dev/null
# The demo runs one copy: the binary alone, not the unit tests (about half
# of the compile time; README, Quick start).
target=()
$demo && target=(--target nbdcopy)
cmake --build build -j"$(nproc)" "${target[@]}"
