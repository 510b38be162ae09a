#!/usr/bin/env python3
"""Turn the raw results of bench/run.sh into tables, target checks, plots and
docs/performance.md.  Standard library only; plots are drawn by gnuplot.

Usage: report.py RAWDIR OUTDIR
  RAWDIR holds what run.sh wrote: meta.txt, version-*.txt, W.json (hyperfine),
  W.cmds, W.check, W.LABEL.rss, W.LABEL.stats, W.size, sweep-W-PARAM.json,
  blkhash-shell.json.
  OUTDIR receives performance.md, bench-requests.png, bench-queue-size.png,
  bench-growth.png.
The tables and the target list are also printed on stdout.
"""
import json
import os
import re
import statistics
import sys

import report_budget
import report_checksum
import report_growth
import report_incremental
import report_local
import report_served
from reportlib import (base_row, fmt_ratio, fmt_time, gnuplot, load_checks, load_cmds, load_meta,
                       load_rows, load_size, measured, read)

WORKLOADS = ["pattern", "sparse", "zero", "latency", "sparsefile", "readnull"]
STRESSES = {
    "pattern": "raw data path, CPU per byte",
    "sparse": "extents, zero handling, many small runs",
    "zero": "an all-zero disk: must cost almost nothing",
    "latency": "a slow remote source (10 ms per read): concurrency and queueing",
    "sparsefile": "local file I/O, SEEK_HOLE, punch-hole",
    "readnull": "the read-only limit (no qemu-img equivalent)",
}
PEERS = ["nbdcopy", "qemu-img"]
SWEEP_WORKLOADS = ["pattern", "latency", "readnull"]

# Checksum workloads (their own section, table and targets).
HASH_WORKLOADS = ["blkhash-pattern", "blkhash-sparse", "blkhash-zero", "blkhash-copy"]
HASH_STRESSES = {
    "blkhash-pattern": "all data: the cost of hashing every byte",
    "blkhash-sparse": "10% data: extents, only the data is read and hashed",
    "blkhash-zero": "no data at all: nothing needs to be read",
    "blkhash-copy": "checksum while copying (pattern → nbdkit memory, --flush)",
}
HASH_LABELS = {  # label -> what the table shows
    "blkhash": "(a) ours --blkhash SRC null:",
    "sha256sum": "(b) ours SRC - | sha256sum",
    "nbdcopy": "(c) /usr/bin/nbdcopy SRC null: (no hash)",
    "ours-null": "(d) ours SRC null: (no hash)",
    "ours-blkhash": "ours --blkhash --blkhash-file=/dev/null",
    "ours": "ours (no hash)",
}
HASH_ORDER = ["blkhash", "sha256sum", "nbdcopy", "ours-null", "ours-blkhash", "ours"]
HASH_BASE = {"blkhash-copy": "ours"}   # the base of the "/ base" column; else ours-null
BLKHASH_VS_NULL = 1.15     # blkhash-pattern: (a) <= 1.15 x (d)
BLKHASH_VS_SHA256SUM = 10  # blkhash-sparse, blkhash-zero: (a) at least 10x faster than (b)
BLKHASH_COPY = 1.10        # blkhash-copy: with --blkhash <= 1.10 x without
WALL_FACTOR = 0.8        # ours wall <= 0.8 x the faster peer
PATTERN_VS_READNULL = 1.15
RSS_LIMIT_MIB = 40
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def stats_coverage(path):
    """Bytes written + zeroed + trimmed on the destination, from nbdkit's stats filter."""
    text = read(path)
    if text is None:
        return None
    total = 0.0
    for m in re.finditer(r"^(write|zero|trim): \d+ ops, [\d.]+ s, ([\d.]+) (\w+)", text, re.M):
        total += float(m.group(2)) * UNITS.get(m.group(3), 0)
    return total


def load_workload(raw, w):
    rows = load_rows(raw, w)
    if rows is None:
        return None
    size_mib = load_size(raw, w)
    cmds, servers = load_cmds(raw, w)
    checks = load_checks(raw, w)
    for label, row in rows.items():
        chk = checks.get(label)
        note = "?"
        ok = False
        if chk:
            rc, result = chk[0], chk[1]
            alloc = chk[2] if len(chk) > 2 else ""
            if rc != "0":
                note = f"exit {rc}"
            elif result == "n/a":
                note, ok = "n/a", True
            else:
                note, ok = result, result == "identical"
                cov = stats_coverage(os.path.join(raw, f"{w}.{label}.stats"))
                if cov is not None and size_mib:
                    pct = 100.0 * cov / (size_mib << 20)
                    if pct < 99.5:
                        ok = False
                    note += f", {min(pct, 100.0):.0f}% written"
                if alloc:
                    note += f", {int(alloc) / 2**20:.0f} MiB allocated"
        row["check"], row["check_ok"] = note, ok
    return {"rows": rows, "cmds": cmds, "servers": servers, "size_mib": size_mib}


def best_peer(rows, key):
    vals = [(rows[p][key], p) for p in PEERS if p in rows and not rows[p]["failed"]]
    return min(vals) if vals else (None, None)


def workload_table(wl):
    rows = wl["rows"]
    fast, fast_name = best_peer(rows, "wall")
    lean, lean_name = best_peer(rows, "cpu")
    out = ["| command | median wall | CPU (user+sys) | peak RSS | wall / faster peer "
           "| CPU / leaner peer | check |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for label in ["ours"] + PEERS:
        if label not in rows:
            continue
        r = rows[label]
        wall_ratio = r["wall"] / fast if fast else None
        cpu_ratio = r["cpu"] / lean if lean else None
        rss = f"{r['rss_mib']:.1f} MiB" if r["rss_mib"] is not None else "—"
        name = f"**{label}**" if label == "ours" else label
        if r["failed"]:
            name += " (FAILED)"
        out.append(f"| {name} | {fmt_time(r['wall'])} | {fmt_time(r['cpu'])} "
                   f"({fmt_time(r['user'])} + {fmt_time(r['system'])}) | {rss} "
                   f"| {fmt_ratio(wall_ratio)} | {fmt_ratio(cpu_ratio)} | {r['check']} |")
    if fast_name:
        out.append("")
        out.append(f"Faster peer: {fast_name}; leaner peer: {lean_name}. "
                   f"Size {wl['size_mib']} MiB; ours {wl['size_mib'] / rows['ours']['wall']:.0f} MiB/s."
                   if "ours" in rows and not rows["ours"]["failed"]
                   else f"Faster peer: {fast_name}; leaner peer: {lean_name}.")
    return out


def targets(results):
    out = []

    def add(ok, text):
        out.append((ok, text))

    for w in WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        rows = wl["rows"]
        ours = rows.get("ours")
        broken = ours is None or ours["failed"] or not ours["check_ok"]
        why = "" if not broken else (" — ours failed" if ours is None or ours["failed"]
                                     else f" — ours' copy check: {ours['check']}")
        fast, fast_name = best_peer(rows, "wall")
        lean, lean_name = best_peer(rows, "cpu")
        if fast is not None and ours:
            add(not broken and ours["wall"] <= WALL_FACTOR * fast,
                f"{w}: wall ≤ {WALL_FACTOR} × faster peer ({fast_name}): "
                f"{fmt_time(ours['wall'])} vs {fmt_time(WALL_FACTOR * fast)} "
                f"({ours['wall'] / fast:.2f}×){why}")
            add(not broken and ours["cpu"] <= lean,
                f"{w}: CPU ≤ leaner peer ({lean_name}): "
                f"{fmt_time(ours['cpu'])} vs {fmt_time(lean)} ({ours['cpu'] / lean:.2f}×){why}")
    p, rn = results.get("pattern"), results.get("readnull")
    if p and rn and "ours" in p["rows"] and "ours" in rn["rows"]:
        pw, rw = p["rows"]["ours"]["wall"], rn["rows"]["ours"]["wall"]
        # Compare per byte in case the two workloads were run with different sizes.
        ratio = (pw / max(p["size_mib"], 1)) / (rw / max(rn["size_mib"], 1))
        add(ratio <= PATTERN_VS_READNULL and not p["rows"]["ours"]["failed"],
            f"pattern wall ≤ {PATTERN_VS_READNULL} × readnull wall (ours): "
            f"{fmt_time(pw)} vs {fmt_time(rw)} ({ratio:.2f}×)")
    for w in WORKLOADS:
        wl = results.get(w)
        if not wl or "ours" not in wl["rows"]:
            continue
        ours = wl["rows"]["ours"]
        rss = ours["rss_mib"]
        add(rss is not None and rss <= RSS_LIMIT_MIB and not ours["failed"],
            f"{w}: peak RSS ≤ {RSS_LIMIT_MIB} MiB (default settings): "
            + (f"{rss:.1f} MiB" if rss is not None else "not measured")
            + (" — ours failed" if ours["failed"] else ""))
    return out


def load_hash_workload(raw, w):
    """A blkhash-* workload: hyperfine rows plus the checks of run.sh's hash_check
    (W.check lines: LABEL RC NOTE OK)."""
    rows = load_rows(raw, w)
    if rows is None:
        return None
    cmds, servers = load_cmds(raw, w)
    wl = {"rows": rows, "cmds": cmds, "servers": servers, "size_mib": load_size(raw, w)}
    checks = {label: (f[1], f[2] == "1") for label, f in load_checks(raw, w, 4).items()}
    for label, row in rows.items():
        row["check"], row["check_ok"] = checks.get(label, ("not checked", False))
    return wl


def hash_base(w):
    return HASH_BASE.get(w, "ours-null")


def hash_table(hresults):
    """One table for all the checksum workloads."""
    out = ["| workload | command | median wall | CPU (user+sys) | peak RSS | wall / base "
           "| size / wall | check |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for w in HASH_WORKLOADS:
        wl = hresults.get(w)
        if not wl:
            continue
        rows = wl["rows"]
        base = rows.get(hash_base(w))
        first = True
        for label in HASH_ORDER:
            if label not in rows:
                continue
            name = HASH_LABELS.get(label, label).replace("|", "\\|")  # markdown table
            wcell = f"{w} ({wl['size_mib']} MiB)" if first else ""
            out.append(f"| {wcell} " + base_row(name, rows[label], label == hash_base(w), base,
                                                 wl["size_mib"]))
            first = False
    return out


def hash_targets(hresults):
    out = []

    def row(w, label):
        wl = hresults.get(w)
        return wl["rows"].get(label) if wl else None

    def trouble(*named):
        """Why a comparison cannot pass: a failed command or a failed check."""
        why = []
        for label, r in named:
            if r["failed"]:
                why.append(f"{label} failed")
            elif not r["check_ok"]:
                why.append(f"{label}: {r['check']}")
        return "" if not why else " — " + "; ".join(why)

    a, d = row("blkhash-pattern", "blkhash"), row("blkhash-pattern", "ours-null")
    if a and d:
        why = trouble(("(a)", a), ("(d)", d))
        ratio = a["wall"] / d["wall"]
        out.append((not why and ratio <= BLKHASH_VS_NULL,
                    f"blkhash-pattern: (a) --blkhash ≤ {BLKHASH_VS_NULL} × (d) plain read to "
                    f"null: {fmt_time(a['wall'])} vs {fmt_time(d['wall'])} ({ratio:.2f}×){why}"))
    for w in ("blkhash-sparse", "blkhash-zero"):
        a, b = row(w, "blkhash"), row(w, "sha256sum")
        if a and b:
            why = trouble(("(a)", a), ("(b)", b))
            speedup = b["wall"] / a["wall"]
            out.append((not why and speedup >= BLKHASH_VS_SHA256SUM,
                        f"{w}: (a) --blkhash ≥ {BLKHASH_VS_SHA256SUM}× faster than (b) "
                        f"(ours - | sha256sum): {fmt_time(a['wall'])} vs {fmt_time(b['wall'])} "
                        f"({speedup:.1f}× faster){why}"))
    w_, wo = row("blkhash-copy", "ours-blkhash"), row("blkhash-copy", "ours")
    if w_ and wo:
        why = trouble(("with", w_), ("without", wo))
        ratio = w_["wall"] / wo["wall"]
        out.append((not why and ratio <= BLKHASH_COPY,
                    f"blkhash-copy: with --blkhash ≤ {BLKHASH_COPY} × without: "
                    f"{fmt_time(w_['wall'])} vs {fmt_time(wo['wall'])} ({ratio:.2f}×){why}"))
    for w in HASH_WORKLOADS:
        label, what = (("ours-blkhash", "the copy with --blkhash") if w == "blkhash-copy"
                       else ("blkhash", "(a)"))
        r = row(w, label)
        if r:
            out.append((r["check_ok"], f"{w}: check of {what}: {r['check']}"))
    return out


def shell_overhead(raw):
    data = read(os.path.join(raw, "blkhash-shell.json"))
    if data is None:
        return None
    r = json.loads(data)["results"][0]
    return statistics.median(r.get("times") or [r["mean"]])


def sweep(raw, w, param):
    data = read(os.path.join(raw, f"sweep-{w}-{param}.json"))
    size = int((read(os.path.join(raw, f"{w}.size"), "0") or "0").strip() or 0)
    if data is None or not size:
        return None
    points, default = {}, None
    for r in json.loads(data)["results"]:
        if any(c != 0 for c in (r.get("exit_codes") or []) if c is not None):
            continue
        med = statistics.median(r.get("times") or [r["mean"]])
        if r["command"] == "default":   # the default settings, run alongside the points
            default = med
        else:
            points[int(r["command"])] = (size / med, med)
    return {"size": size, "points": points, "default": default}


def plot(raw, outdir, param, xs, xlabel, title, sweeps):
    dat = os.path.join(raw, f"sweep-{param}.dat")
    with open(dat, "w") as f:
        f.write("# x " + " ".join(f"{w}_MiB/s" for w in SWEEP_WORKLOADS) + "\n")
        for x in xs:
            vals = []
            for w in SWEEP_WORKLOADS:
                s = sweeps.get((w, param))
                v = s["points"].get(x) if s else None
                vals.append(f"{v[0]:.1f}" if v else "NaN")
            f.write(f"{x} {' '.join(vals)}\n")
    png = os.path.join(outdir, f"bench-{param}.png")
    labels = []
    for w, desc in (("pattern", "pattern"), ("latency", "latency, 10 ms reads"),
                    ("readnull", "readnull (pattern → null:)")):
        s = sweeps.get((w, param))
        labels.append(f"{desc} ({s['size']} MiB)" if s else desc)
    script = f"""
set terminal pngcairo size 800,480 font 'sans,10'
set output '{png}'
set title "{title}"
set xlabel "{xlabel}"
set ylabel 'throughput (MiB/s, size / median wall)'
set logscale x 2
set xtics ({', '.join(f'"{x}" {x}' for x in xs)})
set xrange [{xs[0] / 1.25}:{xs[-1] * 1.25}]
set yrange [0:*]
set grid
set key below
plot '{dat}' using 1:2 with linespoints lw 2 pt 7 title '{labels[0]}', \\
     '' using 1:3 with linespoints lw 2 pt 5 title '{labels[1]}', \\
     '' using 1:4 with linespoints lw 2 pt 9 title '{labels[2]}'
"""
    return gnuplot(script, png)


def sweep_table(param, xs, sweeps, unit):
    out = [f"| {param} | " + " | ".join(f"{w} MiB/s" for w in SWEEP_WORKLOADS) + " |",
           "|---:|" + "---:|" * len(SWEEP_WORKLOADS)]
    keys = (["default"] if any(sweeps.get((w, param), {}).get("default")
                               for w in SWEEP_WORKLOADS) else []) + xs
    for x in keys:
        cells = []
        for w in SWEEP_WORKLOADS:
            s = sweeps.get((w, param))
            if x == "default":
                med = s.get("default") if s else None
                v = (s["size"] / med, med) if med else None
            else:
                v = s["points"].get(x) if s else None
            cells.append(f"{v[0]:.0f} ({fmt_time(v[1])})" if v else "—")
        out.append(f"| {x}{'' if x == 'default' else unit} | " + " | ".join(cells) + " |")
    return out


def checksum_section(hresults, hlist, shell, meta, tidy):
    md = ["## Checksums", "",
          measured(meta) + " `--blkhash` prints the blkhash digest (sha256, 64 KiB blocks) of the data read. "
          "On a source alone, `nbdcopy --blkhash SRC null:` hashes the data blocks in the "
          "workers and never reads zero extents. Each workload is one hyperfine run "
          f"(`-N`, {meta.get('runs', '?')} runs after {meta.get('warmup', '?')} warm-up) "
          "with these commands side by side:", "",
          "- **(a)** ours `--blkhash SRC null:`: the checksum;",
          "- **(b)** ours `SRC -` piped into `sha256sum`: the classic checksum, every byte "
          "through a pipe (a plain sha256, so a different digest); the only command run "
          "through a shell, `bash -c 'set -o pipefail; …'`"
          + (f" — bash and the pipe by themselves take {fmt_time(shell)} "
             "(`bash -c 'set -o pipefail; true | sha256sum'`), small next to the read"
             if shell is not None else "")
          + "; its CPU includes nbdcopy, bash and sha256sum;",
          "- **(c)** `/usr/bin/nbdcopy SRC null:`: a plain read without a hash, all that "
          "upstream 1.14 can do;",
          "- **(d)** ours `SRC null:` without `--blkhash`: the plain read, the base of the "
          "overhead target.", "",
          "blkhash-copy copies into an nbdkit memory server with `--flush`, with "
          "`--blkhash --blkhash-file=/dev/null` and without.", "",
          "**check**: one extra run per command outside the timing (peak RSS with "
          "`/usr/bin/time`); the digest of (a) and of the copy with `--blkhash` must equal "
          "ours with `--synchronous --blkhash SRC null:` (one thread, synchronous requests: "
          "another code path); on blkhash-zero both must also equal the digest computed from "
          "the definition; the copy's destination is checked with `qemu-img compare`. "
          "**wall / base**: against (d), or against the copy without `--blkhash`.", "",
          "```sh"]
    for w in HASH_WORKLOADS:
        wl = hresults.get(w)
        if not wl:
            continue
        md += [f"# {w}: {HASH_STRESSES[w]}"]
        md += [f"#   server: {tidy(srv)}" for srv in wl["servers"]]
        for label in HASH_ORDER:
            if label in wl["cmds"]:
                md += [f"# {HASH_LABELS.get(label, label)}", tidy(wl["cmds"][label])]
        md += [""]
    if md[-1] == "":
        md.pop()
    md += ["```", ""]
    md += hash_table(hresults) + [""]
    md += ["### Checksum targets", "",
           f"On blkhash-pattern, (a) ≤ {BLKHASH_VS_NULL} × (d); on blkhash-sparse and "
           f"blkhash-zero, (a) at least {BLKHASH_VS_SHA256SUM}× faster than (b); a copy with "
           f"`--blkhash` ≤ {BLKHASH_COPY} × the copy without; every digest check passes.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in hlist]
    hpass = sum(1 for ok, _ in hlist if ok)
    md += ["", f"{hpass} of {len(hlist)} checksum targets met.", ""]
    return md


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    raw, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    meta = load_meta(raw)
    tmp, root, shm = meta.get("tmp", ""), meta.get("root", ""), meta.get("shm", "")

    def tidy(cmd):
        if meta.get("ours_copy"):
            cmd = cmd.replace(meta["ours_copy"], meta.get("ours", "ours"))
        if tmp:
            cmd = cmd.replace(tmp, "$T")
        if shm:
            cmd = cmd.replace(shm, "$SHM")
        if root:
            cmd = cmd.replace(root + "/", "")
        return cmd

    results = {w: wl for w in WORKLOADS if (wl := load_workload(raw, w))}
    tlist = targets(results)
    lresults = {w: wl for w in report_local.LOCAL_WORKLOADS if (wl := report_local.load(raw, w))}
    llist = report_local.targets(lresults)
    sresults = {w: wl for w in report_served.SERVED_WORKLOADS if (wl := report_served.load(raw, w))}
    slist = report_served.targets(sresults)
    iresult = report_incremental.load(raw)
    ilist = report_incremental.targets(iresult)
    gresult = report_growth.load(raw)
    glist = report_growth.targets(gresult)
    hresults = {w: wl for w in HASH_WORKLOADS if (wl := load_hash_workload(raw, w))}
    hlist = hash_targets(hresults)
    cresult = report_checksum.load(raw)
    clist = report_checksum.targets(cresult)
    shell = shell_overhead(raw)

    # --- terminal output ---
    ours_path = tidy(meta.get("ours", "?"))
    print(f"ours = {ours_path}")
    for w in WORKLOADS:
        if w in results:
            print(f"\n## {w} ({results[w]['size_mib']} MiB)\n")
            print("\n".join(workload_table(results[w])))
    npass = sum(1 for ok, _ in tlist if ok)
    if results:
        print("\n## Targets\n")
        for ok, text in tlist:
            print(f"{'PASS' if ok else 'FAIL'}  {text}")
        print(f"\n{npass} passed, {len(tlist) - npass} failed")
    if lresults:
        print("\n".join(report_local.terminal(lresults, llist)))
    if sresults:
        print("\n".join(report_served.terminal(sresults, slist)))
    if iresult:
        print("\n".join(report_incremental.terminal(iresult, ilist)))
    if gresult:
        print("\n".join(report_growth.terminal(gresult, glist)))
    if cresult:
        print("\n".join(report_checksum.terminal(cresult, clist)))
    hpass = sum(1 for ok, _ in hlist if ok)
    if hresults:
        print("\n## Checksums\n")
        print("\n".join(hash_table(hresults)))
        if shell is not None:
            print(f"\nshell + pipe overhead of (b) alone: {fmt_time(shell)}")
        print("\n## Checksum targets\n")
        for ok, text in hlist:
            print(f"{'PASS' if ok else 'FAIL'}  {text}")
        print(f"\n{hpass} passed, {len(hlist) - hpass} failed")
        for w, wl in hresults.items():
            for label, r in wl["rows"].items():
                if r["check"].startswith("MISMATCH"):
                    print(f"\n!!! {w} ({label}): {r['check']}")

    # --- sweeps + plots ---
    sweeps = {}
    for w in SWEEP_WORKLOADS:
        for param in ("requests", "queue-size"):
            s = sweep(raw, w, param)
            if s:
                sweeps[(w, param)] = s
    req_xs, q_xs = [1, 2, 4, 8, 16, 64], [1, 2, 4, 8, 16]
    pngs = {}
    if sweeps:
        pngs["requests"] = plot(raw, outdir, "requests", req_xs,
                                "--requests (in flight per connection)",
                                "ours: throughput vs --requests (other settings default)", sweeps)
        pngs["queue-size"] = plot(raw, outdir, "queue-size", q_xs, "--queue-size (MiB)",
                                  "ours: throughput vs --queue-size (other settings default)",
                                  sweeps)
    if gresult:
        pngs["growth"] = report_growth.plot(raw, outdir, gresult)
    confirms = report_budget.load_confirms(raw)
    blist = report_budget.targets(sweeps, results, confirms)
    if blist:
        print("\n## Default settings against the best fixed budget\n")
        print("\n".join(report_budget.table(sweeps, results, confirms)))
        print()
        for ok, text in blist:
            print(f"{'PASS' if ok else 'FAIL'}  {text}")

    # --- performance.md ---
    quick = meta.get("quick") == "1"
    md = ["# Performance", ""]
    md.append(f"Generated by `bench/run.sh` on {meta.get('date', '?')} from commit "
              f"{meta.get('commit', '?')} (measuring took {meta.get('elapsed', '?')} s): every "
              "table below is from this one run. Measurements by hand, A/B checks of single "
              "changes and earlier readings are in [performance-history.md]"
              "(performance-history.md), by date and commit.")
    if quick:
        md += ["", "> **QUICK mode** (small sizes, few runs): a smoke test of the benchmark "
               "script, not a measurement."]
    md += ["", "## Machine", "",
           f"- CPUs: {meta.get('nproc', '?')} × {meta.get('cpu', '?')}",
           f"- memory: {meta.get('mem', '?')}",
           f"- kernel: {meta.get('kernel', '?')}",
           "- shared and noisy: the servers and the copier share the two CPUs, so the "
           "copier's CPU time turns into wall time.",
           "", "## Versions", "",
           f"- ours (`{ours_path}`): "
           + "; ".join((read(os.path.join(raw, 'version-ours.txt'), '?') or '?').split("\n")).strip("; "),
           "- /usr/bin/nbdcopy: "
           + "; ".join((read(os.path.join(raw, 'version-nbdcopy.txt'), '?') or '?').split("\n")).strip("; "),
           *([f"- nbdcopy of the Debian 13 root (`chroot $D13ROOT nbdcopy`, the growth series): "
              + "; ".join(newer.split("\n")).strip("; ")]
             if (newer := (read(os.path.join(raw, 'version-nbdcopy-1.22.txt'), '') or '').strip())
             else []),
           f"- qemu-img: {(read(os.path.join(raw, 'version-qemu-img.txt'), '?') or '?').strip()}",
           f"- nbdkit: {(read(os.path.join(raw, 'version-nbdkit.txt'), '?') or '?').strip()}",
           f"- hyperfine: {(read(os.path.join(raw, 'version-hyperfine.txt'), '?') or '?').strip()}",
           "", "## Method", "",
           f"Each workload is one hyperfine run (`-N`, {meta.get('runs', '?')} runs after "
           f"{meta.get('warmup', '?')} warm-up) with the commands side by side; the servers are "
           "started once per workload on unix sockets in a temporary directory `$T`. "
           "NBD destinations are nbdkit memory servers that every run overwrites whole "
           "(`--flush` for nbdcopy, `-n -W` for qemu-img, never a target-is-zero hint); the "
           "file destinations are on tmpfs and removed before every run (`--prepare 'rm -f DST'`).",
           "",
           "- **median wall**: median of hyperfine's run times.",
           "- **CPU**: hyperfine's mean user + system time of the copier process alone "
           "(not the servers).",
           "- **peak RSS**: `/usr/bin/time -f %M` on one extra run per command.",
           "- **check**: that extra run copies into a fresh destination (a new nbdkit memory "
           "server with the stats filter, or a new file), then `qemu-img compare` checks it "
           "against the source and the stats filter shows how much of the image was written, "
           "zeroed or trimmed (every byte must be).",
           "- ratios: against the faster (wall) or leaner (CPU) of the two peers; below 1 is "
           "better than both.", ""]
    if results:
        md += ["## Results", "", measured(meta), ""]
    for w in WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        md += [f"### {w}: {STRESSES[w]}", "", "```sh"]
        md += ["# servers / source file, started once:"] + [f"#   {tidy(s)}" for s in wl["servers"]]
        for label in ["ours"] + PEERS:
            if label in wl["cmds"]:
                md += [f"# {label}:", tidy(wl["cmds"][label])]
        md += ["```", ""]
        md += workload_table(wl)
        md += [""]
    if results:
        md += ["## Targets", "",
               "From the issue: wall ≤ 0.8 × the faster peer; CPU ≤ the leaner peer; pattern "
               "wall within 1.15 × readnull wall (ours); peak RSS at default settings ≤ 40 MiB.",
               ""]
        md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
        md += ["", f"{npass} of {len(tlist)} targets met.", ""]
    if lresults:
        md += report_local.section(lresults, llist, meta, tidy)
    if sresults:
        md += report_served.section(sresults, slist, meta, tidy)
    if iresult:
        md += report_incremental.section(iresult, ilist, tidy, meta)
    if gresult:
        md += report_growth.section(gresult, glist, meta, tidy, pngs.get("growth"))
    if hresults:
        md += checksum_section(hresults, hlist, shell, meta, tidy)
    if cresult:
        md += report_checksum.section(cresult, clist, meta, tidy)
    if sweeps:
        md += ["## Sweeps (ours)", "",
               measured(meta) + f" Throughput = size / median wall ({meta.get('sweep_runs', '?')} runs per point after "
               f"{meta.get('sweep_warmup', '?')} warm-up) "
               "on the pattern, latency and readnull workloads, changing one setting at a time.",
               ""]
        if pngs.get("requests"):
            md += ["![throughput vs --requests](bench-requests.png)", ""]
        md += sweep_table("requests", req_xs, sweeps, "") + [""]
        if pngs.get("queue-size"):
            md += ["![throughput vs --queue-size](bench-queue-size.png)", ""]
        md += sweep_table("queue-size", q_xs, sweeps, " MiB") + [""]
        md += report_budget.section(sweeps, results, blist, confirms)
    # Sections measured by hand or by scripts of their own (the 64 TiB qcow2,
    # --salvage's cost): kept as written.
    by_hand = os.path.join(os.path.dirname(os.path.abspath(__file__)), "by_hand.md")
    if os.path.exists(by_hand) and meta.get("quick") != "1":
        with open(by_hand) as f:
            text = f.read()
        md += [text[text.index("-->") + 3:].strip(), ""]
    # Both generations of peers (bench/generations.sh, its own run; report_generations.py
    # writes this section) and the hand-written reading of the figures.
    generations = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generations.md")
    if os.path.exists(generations) and meta.get("quick") != "1":
        with open(generations) as f:
            md += [f.read().rstrip(), ""]
    analysis = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    if os.path.exists(analysis) and meta.get("quick") != "1":
        with open(analysis) as f:
            md += [f.read().rstrip(), ""]
    md += ["## How to reproduce", "",
           "```sh",
           "scripts/setup.sh            # packages + build",
           "bench/run.sh                # full run: this page and docs/bench-*.png",
           "QUICK=1 bench/run.sh        # smoke test in about a minute (bench/out/quick/)",
           "NBDCOPY=/usr/bin/nbdcopy bench/run.sh   # any binary as \"ours\"",
           "```", "",
           "See `bench/README.md` for the environment variables (`RUNS`, `WARMUP`, `SWEEP`, "
           "`WORKLOADS`, …). Raw hyperfine JSON and logs are kept in `bench/out/raw/`.", ""]
    path = os.path.join(outdir, "performance.md")
    with open(path, "w") as f:
        f.write("\n".join(md))
    print(f"\nreport: wrote {path}" + "".join(f", {p}" for p in pngs.values() if p))


if __name__ == "__main__":
    main()
