#!/usr/bin/env python3
"""bench/report_limits.py OUT.json: the table of one set of bench/server_limits.sh.

Per command (bench/floor_rounds.py's samples), the medians of: wall, the copier's CPU, the
destination's (a server started per run: server_cpu), the CPU of the servers that serve all
rounds (src: also_cpu), the floor (reportlib.floor_of), wall / floor, wall / the
destination's CPU (where one ran per run) and the first command's wall over this one's,
pair by pair.
"""
import json
import statistics
import sys

from reportlib import floor_of


def main(path):
    results = json.load(open(path))["results"]
    first = next(iter(results.values()))
    med = lambda xs: statistics.median(list(xs))
    print(f"{'command':16} {'wall':>7} {'copier':>7} {'dst':>7} {'src':>7} {'floor':>7} "
          f"{'w/floor':>7} {'w/dst':>6} {'first/this':>10}")
    for name, runs in results.items():
        w_dst = (f"{med(r['wall'] / r['server_cpu'] for r in runs):6.2f}"
                 if all(r["server_cpu"] for r in runs) else f"{'-':>6}")
        print(f"{name:16} {med(r['wall'] for r in runs):7.3f} {med(r['cpu'] for r in runs):7.3f} "
              f"{med(r['server_cpu'] for r in runs):7.3f} {med(r['also_cpu'] for r in runs):7.3f} "
              f"{med(floor_of(r) for r in runs):7.3f} "
              f"{med(r['wall'] / floor_of(r) for r in runs):7.2f} {w_dst} "
              f"{med(a['wall'] / b['wall'] for a, b in zip(first, runs)):10.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
