# Helpers for the ssh-* tests (nbd+ssh:// and nbds+ssh://): a real sshd on
# 127.0.0.1 at a free port, with keys, host key and configuration in
# $T/ssh, and a wrapper "ssh" first in $PATH that runs the real ssh with
# that configuration (-F: ~/.ssh and /etc/ssh are never read or touched).
# Source it after lib.sh.
#
#   start_sshd          starts sshd (skips the test when it cannot run:
#                       not root, no sshd); sets SSH_PORT, SSH_HOST
#   ssh_uri NAME [Q]    nbd+ssh://127.0.0.1:PORT/?socket=$T/NAME.sock[&Q]
#   ssh_runs            how many ssh the wrapper has started so far
#   ssh_argv N          the Nth ssh's argv as nbdcopy gave it ("-p P H nc ...")
#   ssh_pid N           the Nth ssh's pid
#
# The wrapper logs every run in $T/ssh/runs ("PID ARGS...", one line each)
# before it execs the real ssh. SSH_WRAPPER_MODE=dry (in nbdcopy's
# environment) makes it log and exit 1 without running ssh;
# SSH_WRAPPER_CONFIG=FILE gives ssh another configuration.

SSH_DIR=$T/ssh

_ssh_wrapper() {
    mkdir -p "$SSH_DIR/bin"
    local real
    real=$(type -P ssh) || skip "no ssh client"
    cat >"$SSH_DIR/bin/ssh" <<WRAPPER
#!/bin/sh
echo "\$\$ \$*" >>"$SSH_DIR/runs"
[ "\${SSH_WRAPPER_MODE:-}" != dry ] || exit 1
exec "$real" -F "\${SSH_WRAPPER_CONFIG:-$SSH_DIR/ssh_config}" "\$@"
WRAPPER
    chmod +x "$SSH_DIR/bin/ssh"
    : >"$SSH_DIR/runs"
    PATH=$SSH_DIR/bin:$PATH
}

# The wrapper alone (for tests that must show ssh never ran).
use_ssh_wrapper() {
    mkdir -p "$SSH_DIR"
    _ssh_wrapper
    : >"$SSH_DIR/ssh_config"
}

start_sshd() {
    local sshd=/usr/sbin/sshd
    [[ -x $sshd ]] || skip "no $sshd (openssh-server)"
    [[ $(id -u) -eq 0 ]] || skip "sshd needs root (privilege separation, logging in)"
    require_cmd ssh-keygen
    require_cmd nc
    mkdir -p "$SSH_DIR" /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/host_key" </dev/null
    ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/id" </dev/null
    ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/other_id" </dev/null
    cp "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys"
    SSH_HOST=127.0.0.1
    local attempt pid i
    for ((attempt = 0; attempt < 20; attempt++)); do
        SSH_PORT=$((20000 + RANDOM % 40000))
        cat >"$SSH_DIR/sshd_config" <<CONF
ListenAddress $SSH_HOST:$SSH_PORT
HostKey $SSH_DIR/host_key
PidFile $SSH_DIR/sshd.pid
AuthorizedKeysFile $SSH_DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
LogLevel VERBOSE
CONF
        rm -f "$SSH_DIR/sshd.pid"
        "$sshd" -f "$SSH_DIR/sshd_config" -D -e >"$T/sshd.log" 2>&1 &
        pid=$!
        for ((i = 0; i < 300; i++)); do
            [[ -s $SSH_DIR/sshd.pid ]] && break
            _alive "$pid" || break
            nap 0.05
        done
        if [[ -s $SSH_DIR/sshd.pid ]]; then
            # (Not in PIDS: sshd rewrites its process title over its
            # environment, so _ours cannot find our mark there. Our child,
            # not yet waited for, its pid cannot be another's.)
            SSHD_PID=$pid
            at_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
            break
        fi
        wait "$pid" 2>/dev/null || true
        grep -qi "address already in use" "$T/sshd.log" ||
            { cat "$T/sshd.log" >&2; skip "sshd cannot run here"; }
    done
    [[ -n ${SSHD_PID:-} ]] || fail "no free TCP port for sshd after 20 tries"
    local key
    read -r key <"$SSH_DIR/host_key.pub"
    echo "[$SSH_HOST]:$SSH_PORT ${key% *}" >"$SSH_DIR/known_hosts"
    cat >"$SSH_DIR/ssh_config" <<CONF
Host *
  User $(id -un)
  IdentityFile $SSH_DIR/id
  IdentitiesOnly yes
  UserKnownHostsFile $SSH_DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
  LogLevel ERROR
CONF
    _ssh_wrapper
    msg "sshd on $SSH_HOST:$SSH_PORT (pid $SSHD_PID)"
}

ssh_uri() { echo "nbd+ssh://$SSH_HOST:$SSH_PORT/?socket=$T/$1.sock${2:+&$2}"; }
ssh_runs() { local n=0 line; while read -r line; do ((++n)); done <"$SSH_DIR/runs"; echo "$n"; }
ssh_argv() { local line; line=$(sed -n "$1p" "$SSH_DIR/runs"); echo "${line#* }"; }
ssh_pid() { local line; line=$(sed -n "$1p" "$SSH_DIR/runs"); echo "${line%% *}"; }
