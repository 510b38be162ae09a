#!/usr/bin/env bash
# When ssh itself fails, its own words reach the user (ssh's stderr is
# ours), and nbdcopy's line names the URI and says that ssh exited: no
# route to the port (connection refused), no socket at the far end (nc's
# words, ssh's status 1), a key the server does not take,
# a host key that does not match known_hosts. And --retry reconnects a
# connection whose ssh was killed mid-copy through a new ssh, both engines,
# and one whose server was killed and started again, the copies byte for
# byte. Skips without root (sshd).
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/ssh_lib.bash"
require_cmd nbdkit
start_sshd

make_test_file "$T/src.img" $((8 * MiB))
start_nbdkit src -r file "$T/src.img"

ssh_fails() { # WHAT URI SSH-WORDS [STATUS]
    local uri=$2 status=${4:-255}
    _run_failing "$1" 10 "$NBDCOPY" "$uri" null:
    assert_err_contains "$3"
    local last=${ERR##*$'\n'}
    [[ $last =~ ^nbdcopy:\ $(re_quote "$uri"):\ .*\(ssh\ exited\ with\ status\ $status\ before\ its\ NBD\ handshake\ ended\)$ ]] ||
        fail "$1: the last line does not name the URI and ssh's exit: $last"
}

ssh_fails "no remote socket" "$(ssh_uri nowhere)" "nc: $T/nowhere.sock: No such file or directory" 1
ssh_fails "closed port" "nbd+ssh://$SSH_HOST:1/?socket=$T/src.sock" \
    "ssh: connect to host $SSH_HOST port 1: Connection refused"
sed "s|IdentityFile .*|IdentityFile $SSH_DIR/other_id|" "$SSH_DIR/ssh_config" >"$SSH_DIR/wrong_key"
SSH_WRAPPER_CONFIG=$SSH_DIR/wrong_key ssh_fails "wrong key" "$(ssh_uri src)" \
    "Permission denied (publickey)"
read -r other <"$SSH_DIR/other_id.pub"
echo "[$SSH_HOST]:$SSH_PORT ${other% *}" >"$SSH_DIR/wrong_known_hosts"
sed "s|UserKnownHostsFile .*|UserKnownHostsFile $SSH_DIR/wrong_known_hosts|" "$SSH_DIR/ssh_config" \
    >"$SSH_DIR/wrong_host"
SSH_WRAPPER_CONFIG=$SSH_DIR/wrong_host ssh_fails "host key mismatch" "$(ssh_uri src)" \
    "Host key verification failed"

# --retry: the ssh under a copy killed, a new ssh takes over.
stop_server src
start_nbdkit slow -r --filter=log --filter=delay file "$T/src.img" rdelay=40ms \
    logfile="$T/slow-ops.log"
for engine in --synchronous "-C 1 --requests=1"; do
    : >"$SSH_DIR/runs"
    : >"$T/slow-ops.log"
    rm -f "$T/out.img"
    msg "run: nbdcopy -v --retry=3 $engine $(ssh_uri slow) out.img, its ssh killed"
    # shellcheck disable=SC2086
    "$NBDCOPY" -v --retry=3 $engine "$(ssh_uri slow)" "$T/out.img" 2>"$T/retry.err" &
    copy=$!
    _wait_ready "$copy" grep -q "Read" "$T/slow-ops.log" || fail "$engine: the copy never read"
    first=$(ssh_pid 1)
    kill -9 "$first"
    rc=0
    wait "$copy" || rc=$?
    ERR=$(grep -v "^libnbd: debug" "$T/retry.err")
    ((rc == 0)) || fail "$engine: the copy failed after its ssh was killed: $ERR"
    assert_same_file "$T/src.img" "$T/out.img" "--retry across a killed ssh, $engine"
    assert_err_matches "$(re_quote "$(ssh_uri slow)"): connection lost"
    assert_err_matches "$(re_quote "$(ssh_uri slow)"): reconnected \(attempt 1 of 3\)"
    (($(ssh_runs) >= 2)) || fail "$engine: no new ssh after the first was killed"
    [[ $(ssh_pid 2) != "$first" ]] || fail "$engine: the same ssh"
done

# --retry: the server behind ssh killed and started again on its socket.
: >"$SSH_DIR/runs"
: >"$T/slow-ops.log"
rm -f "$T/out.img"
msg "run: nbdcopy -v --retry=4 --synchronous $(ssh_uri slow) out.img, its server killed"
"$NBDCOPY" -v --retry=4 --synchronous "$(ssh_uri slow)" "$T/out.img" 2>"$T/retry.err" &
copy=$!
_wait_ready "$copy" grep -q "Read" "$T/slow-ops.log" || fail "the copy never read"
read -r server <"$T/slow.pid"
_stop_pid KILL "$server" "$server"
start_nbdkit slow -r --filter=log --filter=delay file "$T/src.img" rdelay=40ms \
    logfile="$T/slow-ops.log"
rc=0
wait "$copy" || rc=$?
ERR=$(grep -v "^libnbd: debug" "$T/retry.err")
((rc == 0)) || fail "the copy failed after its server was killed: $ERR"
assert_same_file "$T/src.img" "$T/out.img" "--retry across a killed server behind ssh"
assert_err_matches "$(re_quote "$(ssh_uri slow)"): reconnected \(attempt [1-4] of 4\)"
(($(ssh_runs) >= 2)) || fail "no new ssh after the server was killed"
msg PASS
