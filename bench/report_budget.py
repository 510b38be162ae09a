"""Issue 7, part D: the adaptive budget at default settings against the best fixed budget
of the --queue-size sweep, on pattern, latency and readnull.

The queue-size sweep (sweep-W-queue-size.json) runs the default settings ("default")
side by side with each fixed budget, so the two are measured minutes apart at most; the
default median of the workload's own run (W.json, "ours") is shown next to it.
"""
from reportlib import fmt_ratio, fmt_time

BUDGET_WORKLOADS = ["pattern", "latency", "readnull"]
WITHIN = 1.05   # default wall <= 1.05 x the best fixed budget's


def rows(sweeps, results):
    """[(workload, default-in-sweep, best MiB, best wall, default-in-workload-run)]"""
    out = []
    for w in BUDGET_WORKLOADS:
        s = sweeps.get((w, "queue-size"))
        if not s or not s["points"]:
            continue
        best_q = min(s["points"], key=lambda q: s["points"][q][1])
        run = results.get(w, {}).get("rows", {}).get("ours")
        out.append((w, s.get("default"), best_q, s["points"][best_q][1],
                    run["wall"] if run and not run["failed"] else None))
    return out


def targets(sweeps, results):
    out = []
    for w, default, best_q, best, _ in rows(sweeps, results):
        if default is None:
            out.append((False, f"{w}: default settings within {WITHIN} × the best fixed "
                        "budget: the default was not measured in the sweep (or failed)"))
            continue
        ratio = default / best
        out.append((ratio <= WITHIN,
                    f"{w}: default settings within {WITHIN} × the best fixed budget "
                    f"({best_q} MiB): {fmt_time(default)} vs {fmt_time(best)} ({ratio:.2f}×)"))
    return out


def table(sweeps, results):
    out = ["| workload | default (sweep) | default (workload run) | best fixed budget "
           "| its median | default / best |", "|---|---:|---:|---:|---:|---:|"]
    for w, default, best_q, best, run in rows(sweeps, results):
        out.append(f"| {w} | {fmt_time(default)} | {fmt_time(run)} | {best_q} MiB "
                   f"| {fmt_time(best)} | {fmt_ratio(default / best if default else None)} |")
    return out


def section(sweeps, results, tlist):
    if not tlist:
        return []
    md = ["### Adaptive budget against the best fixed budget", "",
          "Median wall of ours at default settings against the fastest `--queue-size` of the "
          "sweep above (the default runs in the same hyperfine run as the sweep points; the "
          "default of the workload's own run, earlier, is shown for scale). `--queue-size` "
          "is the upper limit of the adaptive per-worker budget, which can still go down to "
          "one request below it: at 1 MiB (the request size) the budget is fixed, above it "
          "the point is \"at most N MiB\". Target (issue 7, part D): default within "
          f"{WITHIN} × the best.", ""]
    md += table(sweeps, results) + [""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    return md + [""]
