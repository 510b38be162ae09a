#!/usr/bin/env bash
# The warning matrix (issue 43): every compiler found here, at -O2
# (RelWithDebInfo) and -O3 (Release), each building everything (the unit
# tests too) with -Werror, and the binary alone configured without
# GoogleTest (BUILD_TESTING=OFF, GTest not findable). Each cell builds in
# build-warnings-CELL through ccache, as scripts/setup.sh (one level deep
# like build/, so that gcc-O2, setup.sh's own build, hits its cache), keeps
# going past a failed file, and prints its time and how many diagnostics
# it gave; any diagnostic or failure fails the run, and the cell's log
# (build-warnings-CELL/warnings.log) says where.
#   Usage: scripts/warnings.sh [CELL...]
#   cells: gcc-O2 gcc-O3 clang-O2 clang-O3 no-gtest (default: every one whose
#          compiler is installed; clang is clang++, else clang++-14)
# Debian 12 has GCC 12 and clang 14; the Debian 13 root GCC 14 (and the
# clang its apt installs): run it there too, in the same checkout, e.g.
#   chroot /var/tmp/d13dev bash -c 'cd /work/NAME && scripts/warnings.sh'
# with NBDCOPY_WARNINGS_DIR=build-d13-warnings there (the build
# directories' prefix: one per root, as they share the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${NBDCOPY_WARNINGS_DIR:-build-warnings}
jobs=${NBDCOPY_WARNINGS_JOBS:-$(nproc)}

clang=$(command -v clang++ || command -v clang++-14 || true)
cells=("$@")
if ((${#cells[@]} == 0)); then
  cells=(gcc-O2 gcc-O3)
  [[ -n $clang ]] && cells+=(clang-O2 clang-O3)
  cells+=(no-gtest)
fi

launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache")
failed=()
start=$SECONDS
for cell in "${cells[@]}"; do
  options=(-DNBDCOPY_WERROR=ON "${launcher[@]}")
  case $cell in
    gcc-O2) options+=(-DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
    gcc-O3) options+=(-DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Release) ;;
    clang-O2 | clang-O3)
      [[ -n $clang ]] || { echo "warnings: $cell: no clang++ here" >&2; exit 2; }
      options+=("-DCMAKE_CXX_COMPILER=$clang")
      [[ $cell == clang-O2 ]] && options+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ||
        options+=(-DCMAKE_BUILD_TYPE=Release)
      ;;
    no-gtest)
      # What a packager builds: no GoogleTest installed, no tests.
      options+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF
        -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)
      ;;
    *) echo "usage: scripts/warnings.sh [gcc-O2|gcc-O3|clang-O2|clang-O3|no-gtest]..." >&2; exit 2 ;;
  esac
  cell_start=$SECONDS
  dir=$out-$cell
  mkdir -p "$dir"
  log=$dir/warnings.log
  status=0
  {
    cmake -S . -B "$dir" "${options[@]}" &&
      cmake --build "$dir" -j"$jobs" -- -k
  } >"$log.new" 2>&1 || status=$?
  mv "$log.new" "$log"
  # One per diagnostic: "file:line:col: warning: ... [-Wname]" (an error
  # under -Werror), whatever the compiler.
  count=$(grep -cE ': (warning|error): .*\[-W' "$log" || true)
  compiler=$(sed -n 's/^set(CMAKE_CXX_COMPILER_\(ID\|VERSION\) "\(.*\)")$/\2/p' \
    "$dir"/CMakeFiles/*/CMakeCXXCompiler.cmake 2>/dev/null | paste -sd' ' || true)
  printf 'warnings: %-9s %-14s %3d diagnostics, exit %d, %4d s\n' \
    "$cell" "${compiler:-?}" "$count" "$status" $((SECONDS - cell_start))
  ((count == 0 && status == 0)) || failed+=("$cell")
done
echo "warnings: ${#cells[@]} cells in $((SECONDS - start)) s"
if ((${#failed[@]})); then
  echo "warnings: failed: ${failed[*]} (logs: $out-CELL/warnings.log)" >&2
  exit 1
fi
