"""Issue 7, part D: the adaptive budget at default settings against the best fixed budget
of the --queue-size sweep, on pattern, latency and readnull.

The sweep's fastest point is the fastest of several noisy medians (3 runs each), so its
median is biased low. bench/run.sh therefore measures it again, fresh, against the default
settings, the two alternating round by round (confirm-W.json, bench/interleave.py); the
target is judged on that confirmation. The sweep's own figures are shown next to it.
"""
import json
import os
import statistics

from reportlib import fmt_ratio, fmt_time

BUDGET_WORKLOADS = ["pattern", "latency", "readnull"]
WITHIN = 1.05   # default wall <= 1.05 x the best fixed budget's


def load_confirms(raw):
    """{workload: (best MiB, default median, best median, runs)} from confirm-W.json."""
    out = {}
    for w in BUDGET_WORKLOADS:
        try:
            with open(os.path.join(raw, f"confirm-{w}.json")) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        times = data.get("times", {})
        best = [name for name in times if name != "default"]
        if "default" not in times or len(best) != 1 or not times[best[0]]:
            continue
        out[w] = (int(best[0]), statistics.median(times["default"]),
                  statistics.median(times[best[0]]), data.get("runs"))
    return out


def rows(sweeps, results, confirms):
    """[(workload, default-in-sweep, best MiB, best wall in sweep, confirmation or None)]"""
    out = []
    for w in BUDGET_WORKLOADS:
        s = sweeps.get((w, "queue-size"))
        if not s or not s["points"]:
            continue
        best_q = min(s["points"], key=lambda q: s["points"][q][1])
        out.append((w, s.get("default"), best_q, s["points"][best_q][1], confirms.get(w)))
    return out


def targets(sweeps, results, confirms=None):
    out = []
    for w, default, best_q, best, confirm in rows(sweeps, results, confirms or {}):
        if confirm is not None:
            q, default, best, runs = confirm
            where = f"alternating, {runs} runs each"
        elif default is not None:
            q, where = best_q, "in the sweep"
        else:
            out.append((False, f"{w}: default settings within {WITHIN} × the best fixed "
                        "budget: the default was not measured (or failed)"))
            continue
        ratio = default / best
        out.append((ratio <= WITHIN,
                    f"{w}: default settings within {WITHIN} × the best fixed budget "
                    f"({q} MiB, {where}): {fmt_time(default)} vs {fmt_time(best)} "
                    f"({ratio:.2f}×)"))
    return out


def table(sweeps, results, confirms=None):
    out = ["| workload | best fixed budget | sweep: default | sweep: best | sweep ratio "
           "| again, alternating: default | best | ratio |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for w, default, best_q, best, confirm in rows(sweeps, results, confirms or {}):
        again = ["n/a"] * 3
        if confirm is not None:
            _, c_default, c_best, _ = confirm
            again = [fmt_time(c_default), fmt_time(c_best), fmt_ratio(c_default / c_best)]
        out.append(f"| {w} | {best_q} MiB | {fmt_time(default)} | {fmt_time(best)} "
                   f"| {fmt_ratio(default / best if default else None)} | " +
                   " | ".join(again) + " |")
    return out


def section(sweeps, results, tlist, confirms=None):
    if not tlist:
        return []
    md = ["### Adaptive budget against the best fixed budget", "",
          "Median wall of ours at default settings against the fastest `--queue-size` of the "
          "sweep above. The fastest of five noisy medians is biased low, so that point and the "
          "default are measured again, fresh, alternating run by run (`bench/interleave.py`, "
          "so that the shared machine's drift falls on both alike); the target is judged on "
          "that. `--queue-size` is the upper limit of the adaptive per-worker budget, which "
          "can still go down to one request below it. Target (issue 7, part D): default "
          f"within {WITHIN} × the best.", ""]
    md += table(sweeps, results, confirms) + [""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    return md + [""]
