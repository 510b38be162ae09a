"""The copies through a qemu-nbd the copy starts itself (bench/served_workloads.sh): the
floor, the tables and the targets of their part of performance.md.

Raw files per workload W: W.json (bench/floor_rounds.py), W.cmds, W.check (LABEL RC
CHECK), W.size.
"""
import json
import os
import statistics

from reportlib import fmt_ratio, fmt_time, floor_of, load_checks, load_cmds, load_size, measured, read

SERVED_WORKLOADS = ["qcow2-source", "file-to-qcow2", "nbd-to-qcow2"]
STRESSES = {
    "qcow2-source": "a real ext4 image in qcow2, `[ qemu-nbd -r -f qcow2 ]`, into a file",
    "file-to-qcow2": "the raw ext4 image into a fresh `[ qemu-nbd -f qcow2 out.qcow2 ]`",
    "nbd-to-qcow2": "an NBD source (nbdkit file) into a fresh `[ qemu-nbd -f qcow2 out.qcow2 ]`",
}
LABELS = {
    "ours": "**ours** `[ qemu-nbd ]`",
    "ours-split": "ours, qemu-nbd on a socket",
    "null-split": "ours → `null:`, qemu-nbd on a socket (no destination)",
    "nbdcopy": "/usr/bin/nbdcopy `[ qemu-nbd ]`",
    "nbdcopy-split": "/usr/bin/nbdcopy, qemu-nbd on a socket",
    "qemu-img": "qemu-img convert",
}
ORDER = ["ours", "ours-split", "null-split", "nbdcopy", "nbdcopy-split", "qemu-img"]
FLOOR_FACTOR = 1.1  # ours-split: median of wall / floor
RSS_LIMIT_MIB = 40


def load(raw, w):
    data = read(os.path.join(raw, f"{w}.json"))
    if data is None:
        return None
    checks = load_checks(raw, w, min_fields=3)
    rows = {}
    for label, samples in json.loads(data)["results"].items():
        if not samples:
            continue
        med = {k: statistics.median(s.get(k, 0.0) for s in samples)
               for k in ("wall", "cpu", "server_cpu", "server_main_cpu", "also_cpu")}
        split = samples[0]["server_cpu"] > 0
        med["floor"] = statistics.median(floor_of(s) for s in samples) if split else None
        med["over_floor"] = (statistics.median(s["wall"] / floor_of(s) for s in samples)
                             if split else None)
        # The split form's copier alone (a [ CMD ] copier reaps its server, whose RSS counts).
        rss = [s["rss_kib"] for s in samples if s.get("rss_kib")]
        med["rss_mib"] = statistics.median(rss) / 1024 if split and rss else None
        med["runs"] = len(samples)
        chk = checks.get(label)
        med["check"] = None if chk is None else (chk[1] if chk[0] == "0" else f"exit {chk[0]}")
        rows[label] = med
    cmds, servers = load_cmds(raw, w)
    return {"rows": rows, "cmds": cmds, "servers": servers, "size_mib": load_size(raw, w)}


def table(wl):
    rows = wl["rows"]
    nbdcopy, qemu_img = rows.get("nbdcopy"), rows.get("qemu-img")
    # The nbdkit source's CPU, where one was measured (nbd-to-qcow2).
    source = any(r["also_cpu"] > 0 for r in rows.values())
    out = ["| command | median wall | copier CPU | qemu-nbd CPU (main thread) "
           + ("| nbdkit source CPU " if source else "")
           + "| floor | wall / floor | wall / nbdcopy | wall / qemu-img | peak RSS | check |",
           "|---|---:|---:|---:|" + ("---:|" if source else "") + "---:|---:|---:|---:|---:|---|"]
    for label in ORDER:
        r = rows.get(label)
        if r is None:
            continue
        split = r["floor"] is not None
        server = (f"{fmt_time(r['server_cpu'])} ({fmt_time(r['server_main_cpu'])})"
                  if split else "in the copier's" if label != "qemu-img" else "—")
        vs_nbdcopy = vs_qemu = None
        if label in ("ours", "nbdcopy", "qemu-img"):
            vs_nbdcopy = r["wall"] / nbdcopy["wall"] if nbdcopy else None
            vs_qemu = r["wall"] / qemu_img["wall"] if qemu_img else None
        rss = f"{r['rss_mib']:.1f} MiB" if r["rss_mib"] is not None else "—"
        check = r["check"] or "—"
        if r["check"] not in (None, "identical"):
            check = f"**{check}**"
        source_cpu = f"| {fmt_time(r['also_cpu'])} " if source else ""
        out.append(f"| {LABELS[label]} | {fmt_time(r['wall'])} | {fmt_time(r['cpu'])} | {server} "
                   f"{source_cpu}"
                   f"| {fmt_time(r['floor']) if split else '—'} | {fmt_ratio(r['over_floor'])} "
                   f"| {fmt_ratio(vs_nbdcopy)} | {fmt_ratio(vs_qemu)} | {rss} | {check} |")
    return out


def targets(results):
    out = []
    for w in SERVED_WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        rows = wl["rows"]
        split, ours, ref = rows.get("ours-split"), rows.get("ours"), rows.get("nbdcopy")
        if split:
            out.append((split["over_floor"] <= FLOOR_FACTOR,
                        f"{w}: wall ≤ {FLOOR_FACTOR} × its floor: {fmt_time(split['wall'])} "
                        f"against a floor of {fmt_time(split['floor'])} "
                        f"({split['over_floor']:.2f}×, median of the rounds' ratios)"))
        if ours and ref:
            out.append((ours["wall"] <= ref["wall"],
                        f"{w}: wall ≤ /usr/bin/nbdcopy's: {fmt_time(ours['wall'])} against "
                        f"{fmt_time(ref['wall'])} ({ours['wall'] / ref['wall']:.2f}×)"))
        if split and split["rss_mib"] is not None:
            out.append((split["rss_mib"] <= RSS_LIMIT_MIB,
                        f"{w}: peak RSS ≤ {RSS_LIMIT_MIB} MiB: {split['rss_mib']:.1f} MiB"))
        for label in ("ours", "nbdcopy", "qemu-img"):
            r = rows.get(label)
            if r is not None and r["check"] != "identical":
                out.append((False, f"{w}: check of {label}: {r['check'] or 'not checked'}"))
    return out


def section(results, tlist, meta, tidy):
    md = ["## Through qemu-nbd, against the floor", "",
          measured(meta) + " "
          f"Each workload alternates its commands round by round (`bench/floor_rounds.py`, "
          f"{meta.get('runs', '?')} rounds after {meta.get('warmup', '?')} warm-up), the "
          "destination emptied (and for qcow2 created afresh) before every run. **ours** and "
          "**nbdcopy** run as a user runs them, starting their `[ qemu-nbd ]`; the **split** "
          "rows run the same qemu-nbd on a socket, reaped apart from the copier, so that "
          "qemu-nbd's CPU, its main thread's (from `/proc/PID/task/PID/stat`, the thread that "
          "serializes its requests) and the copier's are known apart.", "",
          "**floor** = max(qemu-nbd's main-thread CPU, (qemu-nbd's CPU + the copier's + an "
          "nbdkit source's) / 2): on two cores no copy is faster than its busiest thread, or "
          "than half of the CPU it needs. The nbdkit source of nbd-to-qcow2 serves every "
          "round and shares the cores; its CPU is what it spent while each command ran "
          "(`/proc/PID/stat`, `bench/floor_rounds.py --also`). **wall / floor** is the "
          "median of the rounds' ratios. **check**: one more "
          "run of each command, the destination compared with the raw image (`cmp`, or "
          "`qemu-img compare -f raw -F qcow2`). **peak RSS**: median over the rounds of the "
          "split form's copier under `/usr/bin/time -f %M` (a copier reaps its `[ CMD ]` "
          "server, whose RSS would count).",
          ""]
    for w in SERVED_WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        md += [f"### {w}: {STRESSES[w]}", "", "```sh"]
        md += ["# set-up:"] + [f"#   {tidy(s)}" for s in wl["servers"]]
        for label in ORDER:
            if label in wl["cmds"]:
                md += [f"# {label}:", tidy(wl["cmds"][label])]
        md += ["```", ""] + table(wl) + ["", f"Size {wl['size_mib']} MiB.", ""]
    md += ["### Targets (through qemu-nbd)", "",
           f"From issue 27: each path ≤ {FLOOR_FACTOR} × its floor; ours no slower than "
           f"/usr/bin/nbdcopy; peak RSS ≤ {RSS_LIMIT_MIB} MiB; every copy identical.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    md += ["", f"{sum(1 for ok, _ in tlist if ok)} of {len(tlist)} targets met.", ""]
    return md


def terminal(results, tlist):
    lines = []
    for w in SERVED_WORKLOADS:
        if w in results:
            lines += ["", f"## {w} ({results[w]['size_mib']} MiB)", ""] + table(results[w])
    if tlist:
        lines += ["", "## Targets through qemu-nbd", ""]
        lines += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
    return lines
