#!/usr/bin/env python3
"""bench/rounds.py: time shell commands in alternating rounds, with the CPU
of the command and of long-running servers, for side-by-side ratios.

Usage: rounds.py OUT.json RUNS WARMUP SERVER_PIDS NAME CMD [NAME CMD ...]

Each round runs every command once, in order (bench/roundlib.py). CMD is run
by /bin/sh -c. SERVER_PIDS is a comma separated list of processes (nbdkit,
qemu-nbd, a proxy) whose CPU time (utime + stime from /proc/PID/stat) is
charged to the command that ran meanwhile; "-" for none. Writes
  {"runs": N, "results": {NAME: [{"wall": s, "cpu": s, "server_cpu": s}, ...]}}
and exits non-zero if a command fails.
"""
import os
import subprocess
import sys
import time

import roundlib

TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / TICKS


def main(argv):
    commands = roundlib.parse_commands(argv, 5, __doc__)
    runs, warmup = int(argv[2]), int(argv[3])
    pids = [] if argv[4] == "-" else [int(p) for p in argv[4].split(",")]

    def measure(name, cmd):
        servers_before = server_cpu(pids)
        before = os.times()
        start = time.perf_counter()
        done = subprocess.run(["/bin/sh", "-c", cmd], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        after = os.times()
        servers = server_cpu(pids) - servers_before
        roundlib.check_exit("rounds", name, done.returncode, done.stderr)
        cpu = (after.children_user - before.children_user) + \
              (after.children_system - before.children_system)
        return {"wall": wall, "cpu": cpu, "server_cpu": servers}

    roundlib.write(argv[1], runs, "results", roundlib.alternate(commands, runs, warmup, measure))


if __name__ == "__main__":
    main(sys.argv)
