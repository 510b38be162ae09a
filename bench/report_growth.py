#!/usr/bin/env python3
"""bench/report_growth.py RAW [OUTDIR]: how the cost of a copy grows with the work
(bench/growth_workload.sh): fragmentation and virtual size, ours against /usr/bin/nbdcopy
(1.14) and, where the run had a Debian 13 root, its nbdcopy 1.22; the tables, targets, plot
and their part of performance.md (bench/report.py calls load, targets, terminal, plot and
section). Run alone, it prints the tables and targets of RAW; with OUTDIR it also draws
OUTDIR/bench-growth.png and writes the section to OUTDIR/growth.md.

Raw files: growth-SERIES-POINT.json (bench/floor_rounds.py), growth.points (SERIES POINT
BYTES), growth.check (SERIES POINT LABEL RC CHECK ALLOCATED-BYTES), growth.cmds,
version-nbdcopy-1.22.txt. Whichever copiers a run has are reported (older runs: ours and
nbdcopy alone).
"""
import json
import os
import statistics
import sys

from reportlib import fmt_ratio, fmt_time, gnuplot, load_cmds, load_meta, measured, read

SERIES = {
    "fragmentation": "sparse-random, 10 % data in runs of about 4 KiB: the extents grow "
                     "with the size",
    "virtual-size": "holes, with 5 bytes of data at the start, the middle and the end: the "
                    "size grows, the data does not",
}
# The copiers, in the order of the tables; ours first, the others are its peers.
LABELS = ["ours", "nbdcopy", "nbdcopy-1.22"]
TITLES = {"ours": "ours", "nbdcopy": "/usr/bin/nbdcopy 1.14",
          "nbdcopy-1.22": "nbdcopy 1.22 (Debian 13)"}
POINT_TYPES = {"ours": 7, "nbdcopy": 5, "nbdcopy-1.22": 9}
RSS_LIMIT_MIB = 40
PNG = "bench-growth.png"


def present_labels(cmds, samples_by_point):
    """The copiers of a run: those of growth.cmds and of the rounds, ours first."""
    found = set(cmds)
    for samples in samples_by_point:
        found.update(samples)
    found.add("ours")
    return [x for x in LABELS if x in found] + sorted(found - set(LABELS))


def short(label, labels):
    """A label as a table's column names it: plain nbdcopy is 1.14 once 1.22 is beside it."""
    if label == "nbdcopy" and "nbdcopy-1.22" in labels:
        return "nbdcopy 1.14"
    return label.replace("nbdcopy-", "nbdcopy ")


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
    cmds, servers = load_cmds(raw, "growth")
    samples = {}
    for series, plist in points.items():
        for point, _ in plist:
            data = read(os.path.join(raw, f"growth-{series}-{point}.json"))
            samples[(series, point)] = json.loads(data)["results"] if data else {}
    labels = present_labels(cmds, samples.values())
    peers = labels[1:]
    result = {}
    for series, plist in points.items():
        rows = []
        for point, size in plist:
            s = samples[(series, point)]
            row = {"point": point, "size": size, "copiers": {}, "ratios": {}, "checks": {
                label: checks.get((series, point, label), ("not checked", 0))
                for label in labels}}
            for label in labels:
                runs = s.get(label) or []
                row["copiers"][label] = None if not runs else {
                    "wall": statistics.median(x["wall"] for x in runs),
                    "cpu": statistics.median(x["cpu"] for x in runs),
                    "rss_mib": statistics.median(x["rss_kib"] for x in runs) / 1024,
                }
            for peer in peers:
                row["ratios"][peer] = None
                if s.get("ours") and s.get(peer):  # the median of the rounds' ratios, pairwise
                    row["ratios"][peer] = statistics.median(
                        a["wall"] / b["wall"] for a, b in zip(s["ours"], s[peer]))
            rows.append(row)
        result[series] = rows
    version = (read(os.path.join(raw, "version-nbdcopy-1.22.txt"), "") or "").strip()
    return {"series": result, "cmds": cmds, "servers": servers, "labels": labels,
            "peers": peers, "versions": {"nbdcopy-1.22": version} if version else {}}


def fmt_bytes(n):
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def table(rows, labels):
    """One column group per copier (wall, CPU, peak RSS; a peer's group ends with ours /
    the peer), then what ours' check copy allocated, and the checks."""
    head = ["size"]
    for label in labels:
        name = short(label, labels)
        head += [f"{name} wall", f"{name} CPU", f"{name} peak RSS"]
        if label != "ours":
            head.append(f"ours / {name}")
    head += ["written", "check"]
    out = ["| " + " | ".join(head) + " |", "|" + "---:|" * (len(head) - 1) + "---|"]
    for row in rows:
        copiers = row["copiers"]
        if not any(copiers.values()):
            out.append(f"| {row['point']} |" + " — |" * (len(head) - 2) + " not measured |")
            continue
        cells = [row["point"]]
        for label in labels:
            c = copiers[label]
            cells += ([fmt_time(c["wall"]), fmt_time(c["cpu"]), f"{c['rss_mib']:.1f} MiB"]
                      if c else ["—"] * 3)
            if label != "ours":
                cells.append(fmt_ratio(row["ratios"][label]))
        cells.append(fmt_bytes(row["checks"]["ours"][1]))
        checks = {label: check for label, (check, _) in row["checks"].items()}
        cells.append("identical" if set(checks.values()) == {"identical"} else
                     "**" + ", ".join(f"{short(x, labels)} {checks[x]}" for x in labels) + "**")
        out.append("| " + " | ".join(cells) + " |")
    return out


def targets(result):
    out = []
    if not result:
        return out
    labels = result["labels"]
    for series, rows in result["series"].items():
        for row in rows:
            ours = row["copiers"]["ours"]
            name = f"growth {series} {row['point']}"
            failed_checks = [(False, f"{name}: check of {label}: {check}")
                             for label, (check, _) in row["checks"].items()
                             if check != "identical" and (ours or check != "not checked")]
            if not ours:
                out.append((False, f"{name}: not measured"))
                out += failed_checks
                continue
            for peer in result["peers"]:
                ref, ratio = row["copiers"][peer], row["ratios"][peer]
                if not ref or ratio is None:
                    out.append((False, f"{name}: {TITLES.get(peer, peer)} not measured"))
                    continue
                out.append((ratio <= 1.0,
                            f"{name}: wall ≤ {TITLES.get(peer, peer)}'s: "
                            f"{fmt_time(ours['wall'])} against {fmt_time(ref['wall'])} "
                            f"({ratio:.2f}×)"))
            out.append((ours["rss_mib"] <= RSS_LIMIT_MIB,
                        f"{name}: peak RSS ≤ {RSS_LIMIT_MIB} MiB: {ours['rss_mib']:.1f} MiB"))
            out += failed_checks
    return out


def plot(raw, outdir, result):
    """Four panels: wall and peak RSS against size, for each series, log-log; one line per
    copier."""
    labels = result["labels"]
    n = len(labels)
    files = {}
    for series, rows in result["series"].items():
        dat = os.path.join(raw, f"growth-{series}.dat")
        with open(dat, "w") as f:
            f.write("# GiB " + " ".join(f"{x}_wall_s" for x in labels) + " "
                    + " ".join(f"{x}_rss_MiB" for x in labels) + "\n")
            for row in rows:
                copiers = row["copiers"]
                if not any(copiers.values()):
                    continue
                walls = [f"{c['wall']:.4f}" if c else "NaN" for c in
                         (copiers[x] for x in labels)]
                rss = [f"{c['rss_mib']:.2f}" if c else "NaN" for c in
                       (copiers[x] for x in labels)]
                f.write(f"{row['size'] / 2**30:g} " + " ".join(walls + rss) + "\n")
        files[series] = dat
    png = os.path.join(outdir, PNG)

    def plot_cmd(dat, first_column):
        """plot DAT with one line per copier, its values in columns FIRST_COLUMN on."""
        return "plot " + ", \\\n     ".join(
            f"'{dat if i == 0 else ''}' using 1:{first_column + i} with linespoints lw 2 "
            f"pt {POINT_TYPES.get(label, 3 + i)} title '{TITLES.get(label, label)}'"
            for i, label in enumerate(labels))

    # Two copiers: their key fits in a row under each panel; more take a row each (the
    # extra height keeps the key off the x label).
    key = "below" if n < 3 else "below vertical height 2"
    panels = []
    for series, dat in files.items():
        xlabel = ("image size (GiB), 10 % data in ~4 KiB runs" if series == "fragmentation"
                  else "virtual size (GiB), 15 bytes of data")
        panels.append(f"""
set title "{series}: median wall"
set xlabel "{xlabel}"
set ylabel "seconds"
set logscale xy
set key {key}
{plot_cmd(dat, 2)}
set title "{series}: peak RSS"
set ylabel "MiB"
unset logscale y
set logscale x
set yrange [0:*]
{plot_cmd(dat, 2 + n)}
set autoscale y
""")
    script = f"""
set terminal pngcairo size 1000,{760 if n < 3 else 820} font 'sans,10'
set output '{png}'
set grid
set datafile missing NaN
set multiplot layout 2,2
{''.join(panels)}
unset multiplot
"""
    return gnuplot(script, png)


def copiers_text(labels):
    names = [TITLES.get(x, x) for x in labels]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def section(result, tlist, meta, tidy, png):
    labels, peers = result["labels"], result["peers"]
    ratios = ", ".join(f"**ours / {short(p, labels)}**" for p in peers) or "**ours / PEER**"
    md = ["## How the cost grows", "",
          measured(meta) + " Each point "
          "is a source file on tmpfs served by `nbdkit -r file` and copied into a file on "
          f"tmpfs, {copiers_text(labels)} alternating round by round "
          f"(`bench/floor_rounds.py`, {meta.get('runs', '?')} rounds after "
          f"{meta.get('warmup', '?')} warm-up, the destination removed before every run). "]
    if "nbdcopy-1.22" in labels:
        version = result["versions"].get("nbdcopy-1.22", "")
        md[-1] += ("nbdcopy 1.22 "
                   + (f"({'; '.join(version.splitlines())}) " if version else "")
                   + "runs by `chroot` in a Debian 13 root, reading the same server through "
                   "the same socket (on tmpfs, which the root shares), into the same "
                   "destination. ")
    md[-1] += ("**wall** and **CPU** (the copier's user + system) are medians; "
               f"{ratios} {'is' if len(peers) == 1 else 'are'} the median of the rounds' "
               "ratios; **peak RSS** is the median of `/usr/bin/time -f %M` over the rounds. "
               "**check**: one more copy by each, compared with the source by `qemu-img "
               "compare`; **written** is what ours' copy allocated. The floor of these copies "
               "is nbdkit's answer to the extent queries plus the bytes written; every copier "
               "pays it, so the ratios are the copiers' own difference.")
    md += ["", "```sh", "# set-up:"] + [f"#   {tidy(s)}" for s in result["servers"]]
    for label in labels:
        if label in result["cmds"]:
            md += [f"# {label}:", tidy(result["cmds"][label])]
    md += ["```", ""]
    if png:
        md += [f"![wall and peak RSS against size]({os.path.basename(png)})", ""]
    for series, rows in result["series"].items():
        md += [f"### {series}: {SERIES.get(series, '')}", ""] + table(rows, labels) + [""]
    peers_text = " or ".join(TITLES.get(p, p) for p in peers) or "its peers"
    md += ["### Targets (growth)", "",
           f"Ours no slower than {peers_text} at every point, peak RSS ≤ {RSS_LIMIT_MIB} "
           "MiB, every copy identical.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    md += ["", f"{sum(1 for ok, _ in tlist if ok)} of {len(tlist)} targets met.", ""]
    return md


def terminal(result, tlist):
    lines = []
    for series, rows in result["series"].items():
        lines += ["", f"## growth: {series}", ""] + table(rows, result["labels"])
    if tlist:
        lines += ["", "## Growth targets", ""]
        lines += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
    return lines


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    raw = argv[1]
    result = load(raw)
    if not result:
        sys.exit(f"report_growth: no growth results in {raw}")
    tlist = targets(result)
    print("\n".join(terminal(result, tlist)))
    npass = sum(1 for ok, _ in tlist if ok)
    print(f"\n{npass} passed, {len(tlist) - npass} failed")
    if len(argv) == 3:
        outdir = argv[2]
        os.makedirs(outdir, exist_ok=True)
        meta = load_meta(raw)

        def tidy(cmd):  # as bench/report.py's
            if meta.get("ours_copy"):
                cmd = cmd.replace(meta["ours_copy"], meta.get("ours", "ours"))
            for key, name in (("tmp", "$T"), ("shm", "$SHM")):
                if meta.get(key):
                    cmd = cmd.replace(meta[key], name)
            if meta.get("root"):
                cmd = cmd.replace(meta["root"] + "/", "")
            return cmd

        png = plot(raw, outdir, result)
        md = section(result, tlist, meta, tidy, png)
        with open(os.path.join(outdir, "growth.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        print(f"\n{png or 'no plot'}; {os.path.join(outdir, 'growth.md')}")


if __name__ == "__main__":
    main(sys.argv)
