#!/usr/bin/env bash
# nbd+ssh:// URIs that ssh or a shell would read as something else are
# refused before anything runs, one line "nbdcopy: URI: why": a host
# starting with '-' (ssh would take "-oProxyCommand=CMD" for an option and
# run CMD, as nbdcopy 1.22.2 does), the same spelt %2D, a user starting with
# '-', a host that is not a host name, a port that is not a number. The
# CMD would create a marker file: it must not exist, no ssh may have started
# (a logging wrapper first in PATH) and the destination is not created.
# Also: without ?socket= the far side is "nc localhost 10809" (the argv a
# wrapper that does not run ssh sees), and an ssh that fails is named.
# Needs no sshd.
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/ssh_lib.bash"
use_ssh_wrapper

cd "$T"  # (where the command would create its marker: a URI's host ends at '/')
marker=$T/marker
cmd="touch%20marker"
# The vector is real: given this word, ssh runs the command.
if real_ssh=$(PATH=${PATH#*:} type -P ssh); then
    "$real_ssh" -F /dev/null -p 1 "-oProxyCommand=touch $T/control" nc </dev/null >/dev/null 2>&1 ||
        true
    [[ -e $T/control ]] || fail "ssh did not run -oProxyCommand's command: the test proves nothing"
fi

refused() { # URI WORDS: refused as source and as destination, nothing run or written
    local uri=$1 words=$2
    expect_fail "$NBDCOPY" "$uri" "$T/out.img"
    assert_err_matches "^nbdcopy: $(re_quote "${uri//hunter2secret/***}"): "
    assert_err_contains "$words"
    [[ ! -e $T/out.img ]] || fail "$uri: the destination was created"
    make_test_file "$T/src.img" $((1 * MiB))
    expect_fail "$NBDCOPY" "$T/src.img" "$uri"
    assert_err_contains "$words"
    [[ ! -e $marker ]] || fail "$uri: the injected command ran"
    [[ ! -s $SSH_DIR/runs ]] || fail "$uri: ssh ran: $(cat "$SSH_DIR/runs")"
}

refused "nbd+ssh://-oProxyCommand=$cmd/?socket=/s" \
    "the ssh host \"-oProxyCommand=touch marker\" starts with '-': ssh would take it for an option"
refused "nbds+ssh://%2DoProxyCommand=$cmd:22/" "starts with '-': ssh would take it for an option"
refused "nbd+ssh://-oProxyCommand=$cmd@localhost/" \
    "the user \"-oProxyCommand=touch marker\" starts with '-'"
refused "nbd+ssh://-o:hunter2secret@localhost/" "the user \"-o\" starts with '-'"
refused "nbd+ssh://a%24($cmd)/" "\"a\$(touch marker)\" is not a host name"
refused "nbd+ssh://host:22%20-oProxyCommand=$cmd/" "the ssh port \"22%20-oProxyCommand"
refused "nbd+ssh://host:-1/" "the ssh port \"-1\" is not a number from 1 to 65535"
refused "nbd+ssh:///?socket=/s" "no ssh host"

# Without ?socket=: port 10809 on the far side, as libnbd 1.22 does.
SSH_WRAPPER_MODE=dry _run_failing "no socket" 5 "$NBDCOPY" "nbd+ssh://somehost:2022/e" null:
read -r _ args <"$SSH_DIR/runs"
[[ $args == "-p 2022 somehost nc localhost 10809" ]] || fail "ssh ran as '$args'"
assert_err_matches "^nbdcopy: nbd\+ssh://somehost:2022/e: .*ssh exited with status 1 "
msg PASS
