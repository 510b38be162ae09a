"""Helpers shared by bench/interleave.py, bench/rounds.py and bench/floor_rounds.py: the
alternating rounds, the failure message and the JSON they write."""
import json
import sys


def alternate(commands, runs, warmup, measure, before_each=None, rotate=False):
    """Runs WARMUP + RUNS rounds; each round calls measure(name, cmd) once for every
    (name, cmd) in COMMANDS, in order, so that the slow drift of a shared machine lands on
    all of them alike (hyperfine runs one command's runs, then the next's). With ROTATE,
    round k starts at the k-th command, so that none always follows the same one (the
    first after a long command finds its freed memory given back to the host, and pays a
    fault per page again). Returns {name: [sample, ...]} with the warm-up rounds left
    out."""
    results = {name: [] for name, _ in commands}
    for round_number in range(warmup + runs):
        shift = round_number % len(commands) if rotate else 0
        for name, cmd in commands[shift:] + commands[:shift]:
            if before_each:
                before_each()
            sample = measure(name, cmd)
            if round_number >= warmup:
                results[name].append(sample)
    return results


def check_exit(tool, name, exit_code, stderr, what=""):
    """Exits with "TOOL: NAME failed (EXIT_CODE): STDERR's tail" unless EXIT_CODE is 0."""
    if exit_code != 0:
        tail = stderr.decode(errors="replace").strip()[-400:]
        sys.exit(f"{tool}: {name}{what} failed ({exit_code}): {tail}")


def write(out, runs, key, results):
    with open(out, "w") as f:
        json.dump({"runs": runs, key: results}, f)


def parse_commands(argv, first, usage):
    """NAME CMD pairs from argv[first:]; exits with USAGE unless there is at least one."""
    if len(argv) < first + 2 or (len(argv) - first) % 2:
        sys.exit(usage)
    return [(argv[i], argv[i + 1]) for i in range(first, len(argv), 2)]
