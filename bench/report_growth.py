"""How the cost of a copy grows with the work (bench/growth_workload.sh): fragmentation and
virtual size, ours against /usr/bin/nbdcopy; the tables, targets, plot and their part of
performance.md.

Raw files: growth-SERIES-POINT.json (bench/floor_rounds.py), growth.points (SERIES POINT
BYTES), growth.check (SERIES POINT LABEL RC CHECK ALLOCATED-BYTES), growth.cmds.
"""
import json
import os
import statistics

from reportlib import fmt_ratio, fmt_time, gnuplot, load_cmds, measured, read

SERIES = {
    "fragmentation": "sparse-random, 10 % data in runs of about 4 KiB: the extents grow "
                     "with the size",
    "virtual-size": "holes, with 5 bytes of data at the start, the middle and the end: the "
                    "size grows, the data does not",
}
LABELS = ["ours", "nbdcopy"]
RSS_LIMIT_MIB = 40
PNG = "bench-growth.png"


def load(raw):
    points = {}
    for line in (read(os.path.join(raw, "growth.points"), "") or "").splitlines():
        series, point, size = line.split("\t")
        points.setdefault(series, []).append((point, int(size)))
    if not points:
        return None
    checks = {}
    for line in (read(os.path.join(raw, "growth.check"), "") or "").splitlines():
        series, point, label, rc, check, alloc = line.split("\t")
        checks[(series, point, label)] = (check if rc == "0" else f"exit {rc}", int(alloc))
    result = {}
    for series, plist in points.items():
        rows = []
        for point, size in plist:
            data = read(os.path.join(raw, f"growth-{series}-{point}.json"))
            row = {"point": point, "size": size}
            samples = json.loads(data)["results"] if data else {}
            for label in LABELS:
                s = samples.get(label) or []
                row[label] = None if not s else {
                    "wall": statistics.median(x["wall"] for x in s),
                    "cpu": statistics.median(x["cpu"] for x in s),
                    "rss_mib": statistics.median(x["rss_kib"] for x in s) / 1024,
                    "check": checks.get((series, point, label), ("not checked", 0)),
                }
            ours, ref = row["ours"], row["nbdcopy"]
            row["ratio"] = None
            if ours and ref:  # the median of the rounds' ratios, pairwise
                row["ratio"] = statistics.median(
                    a["wall"] / b["wall"] for a, b in zip(samples["ours"], samples["nbdcopy"]))
            rows.append(row)
        result[series] = rows
    cmds, servers = load_cmds(raw, "growth")
    return {"series": result, "cmds": cmds, "servers": servers}


def fmt_bytes(n):
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def table(rows):
    out = ["| size | ours wall | nbdcopy wall | ours / nbdcopy | ours CPU | nbdcopy CPU "
           "| ours peak RSS | nbdcopy peak RSS | written | check |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        ours, ref = row["ours"], row["nbdcopy"]
        if not ours or not ref:
            out.append(f"| {row['point']} | — | — | — | — | — | — | — | — | not measured |")
            continue
        checks = {ours["check"][0], ref["check"][0]}
        check = "identical" if checks == {"identical"} else \
            f"**ours {ours['check'][0]}, nbdcopy {ref['check'][0]}**"
        out.append(f"| {row['point']} | {fmt_time(ours['wall'])} | {fmt_time(ref['wall'])} "
                   f"| {fmt_ratio(row['ratio'])} | {fmt_time(ours['cpu'])} "
                   f"| {fmt_time(ref['cpu'])} | {ours['rss_mib']:.1f} MiB "
                   f"| {ref['rss_mib']:.1f} MiB | {fmt_bytes(ours['check'][1])} | {check} |")
    return out


def targets(result):
    out = []
    if not result:
        return out
    for series, rows in result["series"].items():
        for row in rows:
            ours, ref = row["ours"], row["nbdcopy"]
            name = f"growth {series} {row['point']}"
            if not ours or not ref:
                out.append((False, f"{name}: not measured"))
                continue
            out.append((row["ratio"] <= 1.0,
                        f"{name}: wall ≤ /usr/bin/nbdcopy's: {fmt_time(ours['wall'])} against "
                        f"{fmt_time(ref['wall'])} ({row['ratio']:.2f}×)"))
            out.append((ours["rss_mib"] <= RSS_LIMIT_MIB,
                        f"{name}: peak RSS ≤ {RSS_LIMIT_MIB} MiB: {ours['rss_mib']:.1f} MiB"))
            for label in LABELS:
                if row[label]["check"][0] != "identical":
                    out.append((False, f"{name}: check of {label}: {row[label]['check'][0]}"))
    return out


def plot(raw, outdir, result):
    """Four panels: wall and peak RSS against size, for each series, log-log."""
    files = {}
    for series, rows in result["series"].items():
        dat = os.path.join(raw, f"growth-{series}.dat")
        with open(dat, "w") as f:
            f.write("# GiB ours_wall_s nbdcopy_wall_s ours_rss_MiB nbdcopy_rss_MiB\n")
            for row in rows:
                if row["ours"] and row["nbdcopy"]:
                    f.write(f"{row['size'] / 2**30:g} {row['ours']['wall']:.4f} "
                            f"{row['nbdcopy']['wall']:.4f} {row['ours']['rss_mib']:.2f} "
                            f"{row['nbdcopy']['rss_mib']:.2f}\n")
        files[series] = dat
    png = os.path.join(outdir, PNG)
    panels = []
    for series, dat in files.items():
        xlabel = ("image size (GiB), 10 % data in ~4 KiB runs" if series == "fragmentation"
                  else "virtual size (GiB), 15 bytes of data")
        panels.append(f"""
set title "{series}: median wall"
set xlabel "{xlabel}"
set ylabel "seconds"
set logscale xy
set key below
plot '{dat}' using 1:2 with linespoints lw 2 pt 7 title 'ours', \\
     '' using 1:3 with linespoints lw 2 pt 5 title '/usr/bin/nbdcopy'
set title "{series}: peak RSS"
set ylabel "MiB"
unset logscale y
set logscale x
set yrange [0:*]
plot '{dat}' using 1:4 with linespoints lw 2 pt 7 title 'ours', \\
     '' using 1:5 with linespoints lw 2 pt 5 title '/usr/bin/nbdcopy'
set autoscale y
""")
    script = f"""
set terminal pngcairo size 1000,760 font 'sans,10'
set output '{png}'
set grid
set multiplot layout 2,2
{''.join(panels)}
unset multiplot
"""
    return gnuplot(script, png)


def section(result, tlist, meta, tidy, png):
    md = ["## How the cost grows", "",
          measured(meta) + " Each point "
          "is a source file on tmpfs served by `nbdkit -r file` and copied into a file on "
          "tmpfs, ours and /usr/bin/nbdcopy alternating round by round "
          f"(`bench/floor_rounds.py`, {meta.get('runs', '?')} rounds after "
          f"{meta.get('warmup', '?')} warm-up, the destination removed before every run). "
          "**wall** and **CPU** (the copier's user + system) are medians; **ours / nbdcopy** is "
          "the median of the rounds' ratios; **peak RSS** is the median of `/usr/bin/time "
          "-f %M` over the rounds. **check**: one more copy by each, compared with the source "
          "by `qemu-img compare`; **written** is what that copy allocated. The floor of these "
          "copies is nbdkit's answer to the extent queries plus the bytes written; both "
          "copiers pay it, so the ratio is the copiers' own difference.", "",
          "```sh", "# set-up:"] + [f"#   {tidy(s)}" for s in result["servers"]]
    for label in LABELS:
        if label in result["cmds"]:
            md += [f"# {label}:", tidy(result["cmds"][label])]
    md += ["```", ""]
    if png:
        md += [f"![wall and peak RSS against size]({os.path.basename(png)})", ""]
    for series, rows in result["series"].items():
        md += [f"### {series}: {SERIES.get(series, '')}", ""] + table(rows) + [""]
    md += ["### Targets (growth)", "",
           f"Ours no slower than /usr/bin/nbdcopy at every point, peak RSS ≤ {RSS_LIMIT_MIB} "
           "MiB, every copy identical.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    md += ["", f"{sum(1 for ok, _ in tlist if ok)} of {len(tlist)} targets met.", ""]
    return md


def terminal(result, tlist):
    lines = []
    for series, rows in result["series"].items():
        lines += ["", f"## growth: {series}", ""] + table(rows)
    if tlist:
        lines += ["", "## Growth targets", ""]
        lines += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
    return lines
