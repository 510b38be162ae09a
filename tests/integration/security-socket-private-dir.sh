#!/usr/bin/env bash
# The socket a "[ CMD ]" server listens on (made by libnbd for socket
# activation) lives in a directory of its own, mode 700 and owned by us,
# not in a shared one, and is gone after the copy. The command is a probe
# that looks at its inherited socket (fd 3) in /proc, then becomes nbdkit.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit

make_test_file "$T/src.img" $((MiB + 5))
cat >"$T/probe.sh" <<'PROBE'
inode=$(readlink /proc/$$/fd/3 | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
path=$(awk -v inode="$inode" '$7 == inode { print $8 }' /proc/net/unix | head -n 1)
echo "$path" >"$PROBE_OUT"
exec nbdkit -r file "$1"
PROBE

PROBE_OUT=$T/probe.out run_copy -- '[' bash "$T/probe.sh" "$T/src.img" ']' "$T/out.img"
assert_same_file "$T/src.img" "$T/out.img" "copy from [ probe -> nbdkit ]"
path=$(cat "$T/probe.out")
[[ $path == /* ]] || fail "the probe found no socket path on fd 3: '$path'"
dir=$(dirname "$path")
msg "socket: $path"
[[ $dir != /tmp && $dir != /var/tmp && $dir != "${TMPDIR:-/tmp}" ]] ||
    fail "the socket is in a shared directory: $path"
[[ ! -e $dir ]] || fail "the socket directory $dir was left behind"
# The directory is gone now; check its mode while a server runs.
cat >"$T/probe2.sh" <<'PROBE'
inode=$(readlink /proc/$$/fd/3 | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
path=$(awk -v inode="$inode" '$7 == inode { print $8 }' /proc/net/unix | head -n 1)
stat -c '%a %u' "$(dirname "$path")" >"$PROBE_OUT"
exec nbdkit -r file "$1"
PROBE
PROBE_OUT=$T/probe2.out run_copy -- '[' bash "$T/probe2.sh" "$T/src.img" ']' "$T/out2.img"
read -r mode owner <"$T/probe2.out"
[[ $mode == 700 ]] || fail "the socket directory has mode $mode, expected 700"
[[ $owner == "$(id -u)" ]] || fail "the socket directory belongs to uid $owner, not us"
msg "socket directory: mode $mode, owner uid $owner"
msg PASS
