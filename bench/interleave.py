#!/usr/bin/env python3
"""bench/interleave.py: time commands in alternation, for a fair side-by-side.

Usage: interleave.py OUT.json RUNS WARMUP NAME CMD [NAME CMD ...]

Each round runs every command once, in order, so slow drift of a shared
machine lands on all of them alike (hyperfine runs one command's runs, then
the next's). Writes {"runs": RUNS, "times": {NAME: [seconds, ...]}}; exits
non-zero if a command fails. CMD is split with shlex (no shell).
"""
import json
import shlex
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 6 or (len(argv) - 4) % 2:
        sys.exit(__doc__)
    out, runs, warmup = argv[1], int(argv[2]), int(argv[3])
    commands = [(argv[i], shlex.split(argv[i + 1])) for i in range(4, len(argv), 2)]
    times = {name: [] for name, _ in commands}
    for round_number in range(warmup + runs):
        for name, cmd in commands:
            start = time.perf_counter()
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                sys.exit(f"interleave: {name} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace').strip()[-300:]}")
            if round_number >= warmup:
                times[name].append(elapsed)
    with open(out, "w") as f:
        json.dump({"runs": runs, "times": times}, f)


if __name__ == "__main__":
    main(sys.argv)
