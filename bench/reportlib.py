"""Helpers shared by bench/report.py and the other report_*.py: reading the raw results
of bench/run.sh, the floor of a copy and formatting figures."""
import json
import os
import statistics
import subprocess
import sys


def floor_of(sample):
    """A bench/floor_rounds.py sample's floor on two cores: no faster than half of the CPU
    that the copier and its servers need together (also_cpu: servers that serve all rounds,
    --also), nor than a server's busiest (main) thread (qemu-nbd's, where it is known)."""
    everything = sample["cpu"] + sample.get("server_cpu", 0.0) + sample.get("also_cpu", 0.0)
    return max(sample.get("server_main_cpu", 0.0), everything / 2)


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def load_meta(raw):
    meta = {}
    for line in (read(os.path.join(raw, "meta.txt"), "") or "").splitlines():
        key, _, value = line.partition("=")
        meta[key] = value
    return meta


def load_rows(raw, w, rss_prefix=None):
    """The hyperfine results of W (W.json): {label: row}, without the checks. Peak RSS
    comes from RSS_PREFIX.LABEL.rss (default: W.LABEL.rss)."""
    data = read(os.path.join(raw, f"{w}.json"))
    if data is None:
        return None
    rows = {}
    for r in json.loads(data)["results"]:
        label = r["command"]
        times = r.get("times") or [r["mean"]]
        codes = r.get("exit_codes") or []
        rss = read(os.path.join(raw, f"{rss_prefix or w}.{label}.rss"))
        rss_kib = None
        if rss:
            nums = [ln for ln in rss.split() if ln.isdigit()]
            rss_kib = int(nums[-1]) if nums else None
        rows[label] = {
            "wall": statistics.median(times),
            "cpu": r["user"] + r["system"],
            "user": r["user"],
            "system": r["system"],
            "rss_mib": rss_kib / 1024 if rss_kib is not None else None,
            "failed": any(c != 0 for c in codes if c is not None),
            "runs": len(times),
        }
    return rows


def measured(meta):
    """The sentence that dates a section: every table says which run and commit it is."""
    return f"Measured on {meta.get('date', '?')}, commit {meta.get('commit', '?')}."


def fmt_time(s):
    if s is None:
        return "—"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def load_cmds(raw, w):
    """W.cmds: the commands by label, and the server / set-up lines."""
    cmds, servers = {}, []
    for line in (read(os.path.join(raw, f"{w}.cmds"), "") or "").splitlines():
        label, _, cmd = line.partition("\t")
        if label == "server":
            servers.append(cmd)
        else:
            cmds[label] = cmd
    return cmds, servers


def load_size(raw, w):
    return int((read(os.path.join(raw, f"{w}.size"), "0") or "0").strip() or 0)


def load_checks(raw, w, min_fields=3):
    """W.check: {label: [the fields after the label]} (tab-separated lines)."""
    checks = {}
    for line in (read(os.path.join(raw, f"{w}.check"), "") or "").splitlines():
        fields = line.split("\t")
        if len(fields) >= min_fields:
            checks[fields[0]] = fields[1:]
    return checks


def base_row(name, r, is_base, base, size_mib):
    """A table row "| name | wall | CPU | RSS | wall / base | size / wall | check |" of R
    against the row BASE (None: no ratio)."""
    if is_base:
        name += " = base"
    if r["failed"]:
        name += " (FAILED)"
    ratio = r["wall"] / base["wall"] if base and not base["failed"] else None
    rss = f"{r['rss_mib']:.1f} MiB" if r["rss_mib"] is not None else "—"
    check = r["check"] if r["check_ok"] else f"**{r['check']}**"
    return (f"| {name} | {fmt_time(r['wall'])} | {fmt_time(r['cpu'])} "
            f"({fmt_time(r['user'])} + {fmt_time(r['system'])}) | {rss} "
            f"| {fmt_ratio(ratio)} | {size_mib / r['wall']:.0f} MiB/s | {check} |")


def gnuplot(script, png):
    """Runs SCRIPT (which draws PNG) through gnuplot; returns PNG, or None if it failed."""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"report: gnuplot failed for {png}: {e}", file=sys.stderr)
        return None
    return png
