#!/usr/bin/env bash
# A file destination on a full file system: the failed write (io_uring and
# plain system calls alike) ends the copy with one line naming the write
# and ENOSPC, never a success.
# labels: root
source "$(dirname "$0")/lib/lib.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root to mount a small tmpfs"
mkdir "$T/small"
mount -t tmpfs -o size=2M tmpfs "$T/small" 2>/dev/null || skip "cannot mount tmpfs here"
MOUNTS+=("$T/small")  # unmounted at exit by lib.sh's clean-up, pass or fail

make_random_file "$T/src.img" $((8 * MiB))
for env in "" "NBDCOPY_IO_URING=0"; do
    for opts in "" "--synchronous"; do
        rm -f "$T/small/out.img"
        # shellcheck disable=SC2086
        expect_fail env $env "$NBDCOPY" $opts "$T/src.img" "$T/small/out.img"
        assert_err_contains "$T/small/out.img: write at offset"
        assert_err_contains "No space left on device"
    done
done
msg PASS
