#!/usr/bin/env python3
"""bench/report_sweep.py RAW: the tables of bench/budget_sweep.sh, the adaptive budget's
default against the best fixed budget on each slow device (issue 44: within 1.05x).

Raw files per device D: D.json (bench/floor_rounds.py), D.cmds, D.size. Writes
RAW/sweep.md and prints it.
"""
import json
import os
import statistics
import sys

from reportlib import fmt_ratio, fmt_time, load_cmds, read

DEVICES = {
    "disk": "nbdkit pattern → qemu-nbd `--cache=none --aio=native` on a file on the disk",
    "delay": "nbdkit pattern → nbdkit memory behind the delay filter (every write delayed)",
    "memory": "nbdkit pattern → a fresh nbdkit memory (no device: the servers set the pace)",
    "slowread": "nbdkit pattern behind the delay filter (every read delayed) → a fresh nbdkit "
                "memory",
}
TARGET = 1.05


def pair_ratio(a, b):
    n = min(len(a), len(b))
    return statistics.median(a[i]["wall"] / b[i]["wall"] for i in range(n))


def main(argv):
    raw = argv[1]
    out = ["## The adaptive budget on slow devices (issue 44)", ""]
    for dev, what in DEVICES.items():
        data = read(os.path.join(raw, f"{dev}.json"))
        if data is None:
            continue
        res = {k: v for k, v in json.loads(data)["results"].items() if v}
        size = (read(os.path.join(raw, f"{dev}.size"), "") or "").strip()
        cmds, _ = load_cmds(raw, dev)
        default = res["default"]
        fixed = {k: v for k, v in res.items() if k.startswith("R")}
        wall = {k: statistics.median(s["wall"] for s in v) for k, v in res.items()}
        best = min(fixed, key=wall.get) if fixed else None
        out += [f"### {dev}: {what}, {size}", "", "```sh"]
        out += [f"# {k}: {c}" for k, c in cmds.items()] + ["```", "",
                "| command | median wall | copier CPU | floor | wall / floor "
                "| default / this (pairs) |",
                "|---|---:|---:|---:|---:|---:|"]
        for k, v in res.items():
            cpu = statistics.median(s["cpu"] for s in v)
            # floor: the copier's and the servers' CPU over the two cores (bench/
            # generations.sh's, without its qemu-nbd main-thread term).
            floor = statistics.median(
                (s["cpu"] + s.get("server_cpu", 0) + s.get("also_cpu", 0)) / 2 for s in v)
            mark = " (best fixed)" if k == best else ""
            out.append(f"| {k}{mark} | {fmt_time(wall[k])} | {fmt_time(cpu)} "
                       f"| {fmt_time(floor)} | {fmt_ratio(wall[k] / floor)} "
                       f"| {fmt_ratio(pair_ratio(default, v))} |")
        if best:
            r = pair_ratio(default, res[best])
            verdict = "PASS" if r <= TARGET else "FAIL"
            out += ["", f"- **{verdict}**: default / best fixed ({best}) {fmt_ratio(r)} "
                        f"(≤ {TARGET}); medians {fmt_time(wall['default'])} against "
                        f"{fmt_time(wall[best])}"]
        out.append("")
    text = "\n".join(out)
    with open(os.path.join(raw, "sweep.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv)
