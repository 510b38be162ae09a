#!/usr/bin/env python3
"""bench/interleave.py: time commands in alternation, for a fair side-by-side.

Usage: interleave.py OUT.json RUNS WARMUP NAME CMD [NAME CMD ...]

Each round runs every command once, in order (bench/roundlib.py). Writes
{"runs": RUNS, "times": {NAME: [seconds, ...]}}; exits non-zero if a command
fails. CMD is split with shlex (no shell).
"""
import shlex
import subprocess
import sys
import time

import roundlib


def measure(name, cmd):
    start = time.perf_counter()
    done = subprocess.run(shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    roundlib.check_exit("interleave", name, done.returncode, done.stderr)
    return elapsed


def main(argv):
    commands = roundlib.parse_commands(argv, 4, __doc__)
    runs, warmup = int(argv[2]), int(argv[3])
    roundlib.write(argv[1], runs, "times", roundlib.alternate(commands, runs, warmup, measure))


if __name__ == "__main__":
    main(sys.argv)
