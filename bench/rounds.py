#!/usr/bin/env python3
"""bench/rounds.py: time shell commands in alternating rounds, with the CPU
of the command and of long-running servers, for side-by-side ratios.

Usage: rounds.py OUT.json RUNS WARMUP SERVER_PIDS NAME CMD [NAME CMD ...]

Each round runs every command once, in order (so drift of a shared machine
lands on all alike). CMD is run by /bin/sh -c. SERVER_PIDS is a comma
separated list of processes (nbdkit, qemu-nbd, a proxy) whose CPU time
(utime + stime from /proc/PID/stat) is charged to the command that ran
meanwhile; "-" for none. Writes
  {"runs": N, "results": {NAME: [{"wall": s, "cpu": s, "server_cpu": s}, ...]}}
and exits non-zero if a command fails.
"""
import json
import os
import subprocess
import sys
import time

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


def run(cmd):
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(["/bin/sh", "-c", cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    return done, wall, cpu


def main(argv):
    if len(argv) < 7 or (len(argv) - 5) % 2:
        sys.exit(__doc__)
    out, runs, warmup = argv[1], int(argv[2]), int(argv[3])
    pids = [] if argv[4] == "-" else [int(p) for p in argv[4].split(",")]
    commands = [(argv[i], argv[i + 1]) for i in range(5, len(argv), 2)]
    results = {name: [] for name, _ in commands}
    for round_number in range(warmup + runs):
        for name, cmd in commands:
            servers_before = server_cpu(pids)
            done, wall, cpu = run(cmd)
            servers = server_cpu(pids) - servers_before
            if done.returncode != 0:
                sys.exit(f"rounds: {name} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace').strip()[-400:]}")
            if round_number >= warmup:
                results[name].append({"wall": wall, "cpu": cpu, "server_cpu": servers})
    with open(out, "w") as f:
        json.dump({"runs": runs, "results": results}, f)


if __name__ == "__main__":
    main(sys.argv)
