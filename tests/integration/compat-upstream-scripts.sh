#!/usr/bin/env bash
# libnbd's own nbdcopy tests (copy/*.sh of a libnbd source tree) run
# against our binary: each script is upstream's, unchanged, read from the
# source tree where it is installed (`apt-get source libnbd` unpacks one);
# nothing of upstream's is kept in this repository. Its tests/functions.sh
# is made from its functions.sh.in as libnbd's configure would, and our
# nbdcopy comes first on PATH. The tree is NBDCOPY_UPSTREAM_SRC, or the
# newest /root/src/libnbd-* or /usr/src/libnbd-* (the Debian 13 root has
# libnbd 1.22.2's there); without one the test skips.
# Every script passes (exit 0) or skips (77, a prerequisite missing: most
# often root, for the block-device ones), but those in not_ours below.
# UPSTREAM_ONLY='NAME...' runs only those scripts (by hand).
# processors: 2
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

src=${NBDCOPY_UPSTREAM_SRC:-}
if [[ -z $src ]]; then
    src=$(printf '%s\n' /root/src/libnbd-*/ /usr/src/libnbd-*/ 2>/dev/null |
        grep -v '\*' | sort -V | tail -n 1 || true)
fi
[[ -n $src && -f $src/copy/copy-file-to-file.sh && -f $src/tests/functions.sh.in ]] ||
    skip "no libnbd source tree (NBDCOPY_UPSTREAM_SRC, /root/src/libnbd-*: apt-get source libnbd)"
src=${src%/}

# The scripts that test libnbd's nbdcopy and not the tool: each with why.
declare -A not_ours=(
    # "nbdcopy X" where X is libnbd's version: ours prints its own version
    # (compat-upstream and option-version check the two lines' shape).
    [test-version]="--version's first line is our version, not libnbd's"
)

# The scripts that check nbdkit's log of every request against upstream's
# exact list: ours may split the same ranges into other requests (fewer,
# larger zeroes: docs/compatibility.md). When such a script fails only on
# its list, the lists must cover the same ranges with the same kinds of
# request, flags included (lib/request_ranges.py).
shape_only=" copy-sparse copy-sparse-allocated "

# tests/functions.sh as configure makes it: the tools by their names.
mkdir -p "$T/up/tests" "$T/up/bin"
sed -e 's|@abs_top_srcdir@|'"$src"'|g' -e 's|@PYTHON@|python3|g' \
    -e 's|@NBDKIT@|nbdkit|g' -e 's|@QEMU_NBD@|qemu-nbd|g' \
    -e 's|@QEMU_STORAGE_DAEMON@|qemu-storage-daemon|g' -e 's|@CMP@|cmp|g' \
    -e 's|@CUT@|cut|g' -e 's|@DD@|dd|g' -e 's|@REALPATH@|realpath|g' \
    -e 's|@SED@|sed|g' -e 's|@STAT@|stat|g' -e 's|@TR@|tr|g' \
    -e 's|@TRUNCATE@|truncate|g' -e 's|@configure_input@|made by compat-upstream-scripts.sh|' \
    "$src/tests/functions.sh.in" >"$T/up/tests/functions.sh"
! grep -n '@[A-Za-z_]*@' "$T/up/tests/functions.sh" ||
    fail "$src/tests/functions.sh.in: a configure variable this test does not know (above)"
ln -s "$(command -v "$NBDCOPY")" "$T/up/bin/nbdcopy"

# The environment libnbd's copy/Makefile.am gives its tests.
libnbd_version=$("$NBDCOPY" --version | sed -n 's/^libnbd //p')
export PATH=$T/up/bin:$PATH LIBNBD_DEBUG=1 EXPECTED_VERSION=$libnbd_version \
    QEMU_NBD=qemu-nbd PSKTOOL=$(command -v psktool || true)

scripts=()
for script in "$src"/copy/*.sh; do
    name=$(basename "$script" .sh)
    [[ -z ${UPSTREAM_ONLY:-} || " $UPSTREAM_ONLY " == *" $name "* ]] || continue
    [[ -z ${not_ours[$name]:-} ]] || { msg "left out: $name: ${not_ours[$name]}"; continue; }
    scripts+=("$name")
done
((${#scripts[@]})) || fail "no scripts to run in $src/copy"

# run_one NAME: in a directory of its own (the scripts write beside
# themselves, ../tests/functions.sh from there), exit status in NAME.rc.
run_one() {
    local dir=$T/up/run/$1
    mkdir -p "$dir/copy"
    ln -s "$T/up/tests" "$dir/tests"
    local rc=0
    (cd "$dir/copy" && exec timeout 300 bash "$src/copy/$1.sh") >"$T/up/$1.log" 2>&1 || rc=$?
    echo "$rc" >"$T/up/$1.rc"
}

# Two at a time: most wait on servers and shells (nbdkit eval).
passed=() skipped=() failed=()
for name in "${scripts[@]}"; do
    while (($(jobs -rp | wc -l) >= 2)); do wait -n || true; done
    run_one "$name" &
done
wait
for name in "${scripts[@]}"; do
    rc=$(<"$T/up/$name.rc")
    if [[ $rc != 0 && $shape_only == *" $name "* ]] &&
        grep -q 'output does not match expected' "$T/up/$name.log"; then
        if python3 "$TEST_LIB/request_ranges.py" "$src/copy/$name.sh" "$T/up/$name.log" \
            >"$T/up/$name.ranges" 2>&1; then
            rc=0
        fi
        msg "$name: $(<"$T/up/$name.ranges")"
    fi
    case $rc in
    0) passed+=("$name") ;;
    77) skipped+=("$name") ;;
    *)
        failed+=("$name")
        echo "--- $name (exit status $rc): tail of its log ---" >&2
        tail -n 25 "$T/up/$name.log" >&2
        ;;
    esac
done
msg "$src: ${#passed[@]} passed, ${#skipped[@]} skipped (${skipped[*]}), ${#failed[@]} failed"
((${#failed[@]} == 0)) || fail "upstream scripts failed: ${failed[*]}"
((${#passed[@]})) || skip "every upstream script skipped"
msg PASS
