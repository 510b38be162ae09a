#!/usr/bin/env python3
"""bench/report_generations.py RAW [OUT.md]: the tables of bench/generations.sh, ours
against both generations of peers, each row with its floor, and the targets of issue 44.
OUT.md (bench/generations.md, committed) is the section that bench/report.py puts into
docs/performance.md; with another OUT the tables are only printed and written there.

Raw files per workload W: W.json (bench/floor_rounds.py), W.cmds (LABEL<TAB>CMD), W.check
(LABEL RC RESULT), W.size (MiB), W.servers; versions (what ran, when, which commit).
Writes OUT.md and prints it.
"""
import json
import os
import re
import statistics
import sys

from reportlib import fmt_ratio, fmt_time, floor_of, load_checks, load_cmds, load_size, read

WORKLOADS = {
    "pattern": "nbdkit pattern 1 GiB → a fresh nbdkit memory, `--flush`",
    "sparse": "nbdkit sparse-random 8 GiB, 10 % data → a fresh nbdkit memory",
    "readnull": "nbdkit pattern 1 GiB → `null:`",
    "latency": "nbdkit pattern 512 MiB, 10 ms a read → a fresh nbdkit memory",
    "fsimage": "ext4 image (2 GiB, /usr/share) → new file on tmpfs",
    "qcow2": "the same image in qcow2 through `[ qemu-nbd -r -f qcow2 ]` → new file on tmpfs",
    "disk": "nbdkit pattern 1 GiB → `[ qemu-nbd --cache=none --aio=native ]`, a file on the disk",
}
GENERATIONS = {
    "12": ("nbdcopy-1.14", "qemu-img-7.2"),
    "13": ("nbdcopy-1.22", "qemu-img-10"),
}
FAST_TARGET = 0.8    # ours / the faster peer
FLOOR_TARGET = 1.05  # or ours / its floor, where the servers set it
DISK_TARGET = 0.9    # the disk path: ours / nbdcopy
RSS_LIMIT_MIB = 40


def gen_of(label):
    if "@" in label:
        return label.split("@")[1]
    return "12" if label in GENERATIONS["12"] else "13"


def load(raw, w):
    data = read(os.path.join(raw, f"{w}.json"))
    if data is None:
        return None
    results = {k: v for k, v in json.loads(data)["results"].items() if v}
    return {"results": results, "cmds": load_cmds(raw, w)[0], "checks": load_checks(raw, w),
            "size": load_size(raw, w),
            "servers": (read(os.path.join(raw, f"{w}.servers"), "") or "").splitlines()}


def med(samples, f):
    return statistics.median(f(s) for s in samples)


def pair_ratio(a, b):
    """Median of run i of A over run i of B (the same round)."""
    n = min(len(a), len(b))
    return statistics.median(a[i]["wall"] / b[i]["wall"] for i in range(n)) if n else None


def row_figures(samples):
    return {
        "wall": med(samples, lambda s: s["wall"]),
        "cpu": med(samples, lambda s: s["cpu"]),
        "servers": med(samples, lambda s: s.get("server_cpu", 0.0) + s.get("also_cpu", 0.0)),
        "floor": med(samples, floor_of),
        "over_floor": med(samples, lambda s: s["wall"] / floor_of(s)),
        "rss": med(samples, lambda s: s.get("rss_kib") or 0) / 1024,
        "runs": len(samples),
    }


def table(w, wl):
    res = wl["results"]
    out = ["| command | median wall | copier CPU | servers' CPU | floor | wall / floor "
           "| ours / this (pairs) | peak RSS | check |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for label, samples in res.items():
        f = row_figures(samples)
        ours = res.get(f"ours@{gen_of(label)}", res.get("ours@12"))
        vs = pair_ratio(ours, samples) if ours is not None and not label.startswith("ours") else None
        chk = wl["checks"].get(label)
        check = "—" if chk is None else chk[1]
        name = f"**{label}**" if label.startswith("ours") else label
        out.append(f"| {name} | {fmt_time(f['wall'])} | {fmt_time(f['cpu'])} "
                   f"| {fmt_time(f['servers'])} | {fmt_time(f['floor'])} "
                   f"| {fmt_ratio(f['over_floor'])} | {fmt_ratio(vs)} | {f['rss']:.1f} MiB "
                   f"| {check} |")
    return out


def targets(w, wl):
    """One line per generation: PASS/FAIL and the figures it rests on."""
    res, lines = wl["results"], []
    for gen, peers in GENERATIONS.items():
        ours = res.get(f"ours@{gen}")
        if ours is None and w == "fsimage":
            ours = res.get("ours@12")
        if ours is None:
            continue
        present = [p for p in peers if p in res]
        if not present:
            continue
        ratios = {p: pair_ratio(ours, res[p]) for p in present}
        faster = min(present, key=lambda p: med(res[p], lambda s: s["wall"]))
        over_floor = med(ours, lambda s: s["wall"] / floor_of(s))
        rss = med(ours, lambda s: s.get("rss_kib") or 0) / 1024
        split = res.get(f"split@{gen}")
        if split is not None:  # [ qemu-nbd ] rows count the server's RSS: the split row's
            rss = med(split, lambda s: s.get("rss_kib") or 0) / 1024
        if w == "disk":
            nbdcopy = peers[0]
            ok = ratios.get(nbdcopy) is not None and ratios[nbdcopy] <= DISK_TARGET
            goal = f"ours / {nbdcopy} {fmt_ratio(ratios.get(nbdcopy))} (≤ {DISK_TARGET})"
        else:
            fast_ok = ratios[faster] <= FAST_TARGET
            floor_ok = over_floor <= FLOOR_TARGET
            ok = fast_ok or floor_ok
            goal = (f"ours / {faster} (faster) {fmt_ratio(ratios[faster])} (≤ {FAST_TARGET})"
                    f" or ours / floor {fmt_ratio(over_floor)} (≤ {FLOOR_TARGET})")
        slower = [p for p in present if ratios[p] > 1.0]
        # qemu-img in-process against a copy through a qemu-nbd: the design's floor.
        design = w in ("qcow2", "disk") and slower == [peers[1]]
        slower_note = ("none" if not slower else ", ".join(
            f"{p} {fmt_ratio(ratios[p])}" for p in slower))
        qemu_img_wall = fmt_time(med(res[peers[1]], lambda s: s["wall"])) if design else ""
        if design and split is not None:
            slower_note += (f" (the design's floor: qemu-nbd + ours, "
                            f"{fmt_time(med(split, floor_of))}, against qemu-img's wall "
                            f"{qemu_img_wall})")
        nbd_floor = res.get(f"nbd-floor@{gen}")
        if design and nbd_floor is not None:
            slower_note += (f" (the design's floor: qemu-img through the same qemu-nbd, "
                            f"ours / it {fmt_ratio(pair_ratio(ours, nbd_floor))}, against "
                            f"qemu-img straight into the file {qemu_img_wall})")
        ok_all = ok and (not slower or design) and rss < RSS_LIMIT_MIB
        lines.append(f"- generation {gen}: **{'PASS' if ok_all else 'FAIL'}**: {goal}; "
                     f"slower than: {slower_note}; peak RSS {rss:.1f} MiB (< {RSS_LIMIT_MIB})")
    return lines


def tidy(text, root):
    """Commands as a reader would type them: the scratch directory as $IN (inside the root:
    $RIN), the root as $D13ROOT, this checkout's paths relative to it."""
    text = re.sub(r"/tmp/nbdcopy-generations\.\w+", "$RIN", text)
    if root:
        text = text.replace(root + "$RIN", "$IN").replace(root, "$D13ROOT")
    return text.replace(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/", "")


def main(argv):
    raw = argv[1]
    out_path = argv[2] if len(argv) > 2 else os.path.join(raw, "generations.md")
    # (bench/generations.sh passes bench/generations.md only for a full run of all of them.)
    versions = (read(os.path.join(raw, "versions"), "") or "").strip()
    root = next((line.split(": ", 1)[1] for line in versions.splitlines()
                 if line.startswith("root: ")), "")
    out = ["## Both generations of peers, against the floor (issue 44)", "",
           "`bench/generations.sh` (every command of a workload in the same alternating "
           "rounds, `bench/floor_rounds.py --rotate`); `bench/report_generations.py` made "
           "these tables. floor = max(a qemu-nbd's main thread, (copier + servers) CPU / 2), "
           "median over the rounds; *ours / this* is the median of the rounds' ratios, ours "
           "of the same generation over the row's command (below 1: ours is faster). In the "
           "commands, `$IN` is the scratch directory in the root, `$RIN` the same seen from "
           "inside it, `{sock}`/`{rsock}` a run's own socket.", "",
           "```", versions, "```", ""]
    for w, what in WORKLOADS.items():
        wl = load(raw, w)
        if wl is None:
            continue
        out += [f"### {w}: {what}", "", f"Size {wl['size']} MiB.", ""]
        out += ["```sh"] + [f"# source: {s}" for s in wl["servers"]]
        out += [f"# {label}: {tidy(cmd, root)}" for label, cmd in wl["cmds"].items()]
        out += ["```", ""]
        out += table(w, wl) + [""] + targets(w, wl) + [""]
    # The section of the page (bench/generations.md) ends with the reading written by hand.
    here = os.path.dirname(os.path.abspath(__file__))
    reading = os.path.join(here, "generations-reading.md")
    if os.path.dirname(os.path.abspath(out_path)) == here and os.path.exists(reading):
        with open(reading) as f:
            out += [f.read().rstrip()]
    text = "\n".join(out)
    with open(out_path, "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv)
