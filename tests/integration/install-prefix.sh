#!/usr/bin/env bash
# `cmake --install BUILD --prefix DIR` puts the binary, the man page and the
# bash completion under DIR: the installed binary copies a file correctly,
# `man -l` renders the installed page, and the completion sits in
# bash-completion's completionsdir (relative to its prefix) where
# bash-completion's own loader finds it in a non-interactive bash, and
# completes options (every one that --long-options/--short-options list),
# --blkhash algorithms, file names and "null:".
source "$(dirname "$0")/lib/lib.sh"
require_cmd cmake man pkg-config
[[ -n ${NBDCOPY_BUILD_DIR:-} ]] || skip "NBDCOPY_BUILD_DIR is not set (run through ctest)"
loader=/usr/share/bash-completion/bash_completion
[[ -r $loader ]] || skip "bash-completion is not installed"

P="$T/prefix with space"
cmake --install "$NBDCOPY_BUILD_DIR" --prefix "$P" >"$T/install.log" 2>&1 ||
    fail "cmake --install failed: $(cat "$T/install.log")"

msg "the installed binary"
"$P/bin/nbdcopy" --version >"$T/version.txt" || fail "installed binary does not run"
grep -q '^nbdcopy ' "$T/version.txt" || fail "unexpected --version: $(cat "$T/version.txt")"
make_test_file "$T/src.img" $((2 * MiB + 77))
"$P/bin/nbdcopy" "$T/src.img" "$T/out.img" || fail "installed binary failed to copy"
assert_same_file "$T/src.img" "$T/out.img" "copy by the installed binary"

msg "the installed man page"
page=$P/share/man/man1/nbdcopy.1
[[ -f $page ]] || fail "no man page at $page"
MANWIDTH=80 man -l "$page" 2>"$T/man.err" | tr -s " " >"$T/man.txt" ||
    fail "man -l failed: $(cat "$T/man.err")"
grep -q '^NAME' "$T/man.txt" || fail "man -l output has no NAME section"
for text in 'nbdcopy - copy disk images' '--json' 'JSON REPORT' 'SIGNALS' 'EXIT STATUS'; do
    grep -qF -- "$text" "$T/man.txt" || fail "the rendered page lacks '$text'"
done

msg "the installed bash completion"
bc_dir=$(pkg-config --variable=completionsdir bash-completion)
bc_prefix=$(pkg-config --variable=prefix bash-completion)
[[ $bc_dir == "$bc_prefix"/* ]] || skip "completionsdir $bc_dir is outside bash-completion's prefix"
completion=$P/${bc_dir#"$bc_prefix"/}/nbdcopy
[[ -f $completion ]] || fail "no completion at $completion"

# complete WORDS...: what the completion offers for the last word, one per
# line, sorted; loaded by bash-completion's loader from the prefix only.
# bash-completion 2.12 and later (Debian 13) look in their own
# directory (/usr/share/bash-completion/completions, where libnbd-bin puts
# its nbdcopy completion) before XDG_DATA_DIRS, 2.11 (Debian 12) after it:
# the prefix is named as the user's directory, which both look in first.
complete_words() {
    (cd "$T" && XDG_DATA_DIRS=$P/share BASH_COMPLETION_USER_DIR=$P/share/bash-completion \
        bash --norc --noprofile -c '
            source "$1"; shift
            __load_completion nbdcopy || exit 3
            COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
            COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            _nbdcopy nbdcopy "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            printf "%s\n" "${COMPREPLY[@]}" | sort -u' bash "$loader" "$@")
}
expect_completion() { # EXPECTED(one per line) WORDS...
    local want=$1 got; shift
    got=$(complete_words "$@") || fail "completion failed for '$*'"
    [[ $got == "$want" ]] || fail "completing '$*': got [$(echo $got)], expected [$(echo $want)]"
}

( "$NBDCOPY" --long-options; "$NBDCOPY" --short-options; echo --long-options; echo --short-options ) |
    sort -u >"$T/all-options.txt"
expect_completion "$(cat "$T/all-options.txt")" nbdcopy -
expect_completion $'--verbose\n--verify\n--version' nbdcopy --ver
expect_completion $'--json' nbdcopy --js
expect_completion $'sha1\nsha1/\nsha256\nsha256/\nsha512\nsha512/' nbdcopy --blkhash = sh
touch "$T/disk-a.img" "$T/disk-b.img"
expect_completion $'disk-a.img\ndisk-b.img' nbdcopy -p disk-
expect_completion $'null:' nbdcopy disk-a.img nu
expect_completion $'disk-a.img\ndisk-b.img' nbdcopy --blkhash-file disk-
msg PASS
