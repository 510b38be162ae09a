#!/usr/bin/env bash
# nbd+ssh:// through a real sshd on 127.0.0.1 (lib/ssh_lib.bash), nbdkit
# and qemu-nbd behind it on Unix sockets (?socket=: the far side runs
# "nc -U PATH"): as source and as destination, both engines, byte for
# byte (read back around ssh, straight from the socket). Each connection
# is one ssh, run as libnbd 1.22 runs it ("ssh -p PORT HOST nc -U PATH",
# the URI's user never given to ssh): -C 4 onto a multi-conn server starts
# four. Shell words reach the far side as data, not as commands: an export
# name and a socket path full of them copy, and no marker appears. A
# password in the URI stays out of -v and --json.
# Skips without root (sshd).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/ssh_lib.bash"
require_cmd nbdkit
require_cmd qemu-nbd
start_sshd

make_test_file "$T/src.img" $((6 * MiB))
size=$(stat -c %s "$T/src.img")

# Source and destination, both engines.
start_nbdkit dst memory size="$size"
for engine in --synchronous ""; do
    runs=$(ssh_runs)
    run_copy $engine "$T/src.img" "$(ssh_uri dst)"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "file -> nbd+ssh ${engine:-parallel}"
    ((runs < $(ssh_runs))) || fail "no ssh ran for the copy ${engine:-parallel}"
    [[ $(ssh_argv "$(ssh_runs)") == "-p $SSH_PORT $SSH_HOST nc -U $T/dst.sock" ]] ||
        fail "ssh ran as '$(ssh_argv "$(ssh_runs)")', not as libnbd 1.22 runs it"
done
start_qemu_nbd src -r -t -f raw --shared=8 "$T/src.img"
for engine in --synchronous ""; do
    rm -f "$T/out.img"
    run_copy $engine "$(ssh_uri src)" "$T/out.img"
    assert_same_file "$T/src.img" "$T/out.img" "nbd+ssh -> file ${engine:-parallel}"
done

# One ssh per connection: -C 4 -T 4 (threads default to the CPUs) onto a
# multi-conn destination.
stop_server dst
start_nbdkit dst memory size="$size"
runs=$(ssh_runs)
run_copy -C 4 -T 4 "$(ssh_uri src)" "$(ssh_uri dst)"
assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "nbd+ssh -> nbd+ssh -C 4"
to_dst=0
for ((i = runs + 1; i <= $(ssh_runs); i++)); do
    [[ $(ssh_argv "$i") == *" nc -U $T/dst.sock" ]] && ((++to_dst))
done
((to_dst == 4)) || fail "-C 4: $to_dst ssh to the destination, not 4 (one per connection)"

# Shell words in the export name and the socket path are data.
cd "$T"
start_qemu_nbd named -r -t -f raw -x 'disk;touch marker1$(touch marker2)' "$T/src.img"
run_copy "nbd+ssh://$SSH_HOST:$SSH_PORT/disk%3Btouch%20marker1%24(touch%20marker2)?socket=$T/named.sock" \
    "$T/named.img"
assert_same_file "$T/src.img" "$T/named.img" "export name with shell words"
mkdir "$T/a b;touch marker3"
nbdkit -f --exit-with-parent -U "$T/a b;touch marker3/d.sock" -P "$T/odd.pid" memory size="$size" \
    >"$T/odd.log" 2>&1 &
PIDS+=("$!")
_wait_pidfile "$T/odd.pid" "$!" "nbdkit odd" odd
run_copy "$T/src.img" "nbd+ssh://$SSH_HOST:$SSH_PORT/?socket=$T/a%20b%3Btouch%20marker3/d.sock"
assert_nbd_equals_file "nbd+unix:///?socket=$T/a%20b%3Btouch%20marker3/d.sock" "$T/src.img" \
    "socket path with shell words"
[[ $(ssh_argv "$(ssh_runs)") == "-p $SSH_PORT $SSH_HOST nc -U '$T/a b;touch marker3/d.sock'" ]] ||
    fail "the socket path was not quoted for the remote shell: $(ssh_argv "$(ssh_runs)")"
for marker in marker1 marker2 marker3; do
    [[ ! -e $T/$marker && ! -e ~/$marker && ! -e /$marker ]] || fail "$marker: a shell ran a URI's words"
done

# The user is not ssh's; a password stays hidden.
secret=hunter2-ssh-password
uri="nbd+ssh://bob:$secret@$SSH_HOST:$SSH_PORT/?socket=$T/src.sock"
run_kept verbose "$NBDCOPY" -v --json "$uri" null:
((RC == 0)) || fail "a copy with a user and password failed: $ERR"
grep -qF "nbd+ssh://bob:***@$SSH_HOST" "$T/outputs/verbose.err" "$T/outputs/verbose.out" ||
    fail "-v / --json do not show the URI with its password hidden"
assert_no_secrets "$secret"
[[ $(ssh_argv "$(ssh_runs)") != *bob* ]] || fail "the URI's user reached ssh: $(ssh_argv "$(ssh_runs)")"
msg PASS
