#!/usr/bin/env bash
# -V / --version: exactly two lines, "nbdcopy X.Y.Z" and
# "libnbd <pkg-config --modversion libnbd>", exit 0, nothing on stderr.
# X.Y.Z is CMakeLists.txt's project() version (NBDCOPY_PROJECT_VERSION, which
# ctest passes); the man page's header names the same, and NEWS.md has its
# entry.
source "$(dirname "$0")/lib/lib.sh"

version=${NBDCOPY_PROJECT_VERSION:-}
[[ -n $version ]] || skip "NBDCOPY_PROJECT_VERSION is not set (ctest sets it)"
page=$(dirname "$0")/../../docs/nbdcopy.1
th=$(grep -m 1 '^\.TH ' "$page")
[[ $th == *" \"nbdcopy $version\" "* ]] ||
    fail "docs/nbdcopy.1's header names another version than project()'s $version: $th"
msg "man page: $th"
grep -q "^## $version " "$(dirname "$0")/../../NEWS.md" ||
    fail "NEWS.md has no '## $version (DATE)' entry for project()'s version"

want_libnbd=
if command -v pkg-config >/dev/null && pkg-config --exists libnbd; then
    want_libnbd="libnbd $(pkg-config --modversion libnbd)"
fi

for opt in -V --version; do
    "$NBDCOPY" "$opt" >"$T/out.txt" 2>"$T/err.txt" || fail "$opt exited non-zero"
    [[ ! -s $T/err.txt ]] || fail "$opt wrote to stderr: $(cat "$T/err.txt")"
    [[ $(wc -l <"$T/out.txt") -eq 2 ]] ||
        fail "$opt: expected 2 lines, got: $(cat "$T/out.txt")"
    line1=$(sed -n 1p "$T/out.txt"); line2=$(sed -n 2p "$T/out.txt")
    [[ $line1 =~ ^nbdcopy\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$opt line 1: '$line1'"
    [[ $line1 == "nbdcopy $version" ]] || fail "$opt line 1: '$line1', project()'s version is $version"
    if [[ -n $want_libnbd ]]; then
        [[ $line2 == "$want_libnbd" ]] || fail "$opt line 2: '$line2', expected '$want_libnbd'"
    else
        [[ $line2 =~ ^libnbd\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$opt line 2: '$line2'"
    fi
    msg "$opt: $line1 / $line2"
done
msg PASS
