"""The --checksum workloads (bench/checksum_workload.sh): tables, targets and their part of
performance.md.

Raw files per workload W: W.json (bench/floor_rounds.py), W.cmds, W.size (MiB), W.check
(LABEL GOT WANT: the digest each command printed against sha256sum of the same bytes).
"""
import json
import os
import statistics

from reportlib import fmt_ratio, fmt_time, load_cmds, measured, read

WORKLOADS = {
    "checksum-pattern": "`nbdkit -r pattern 1G` into `nbdkit memory` (`--flush`)",
    "checksum-fsimage": "the ext4 image (a copy on tmpfs) into a new file on tmpfs",
    "checksum-sparse": "`nbdkit -r sparse-random 8G percent=10 seed=1`, checksum only "
                       "(90 % zero runs)",
}
LABELS = {
    "sum-copy": "ours `--checksum SRC DST`",
    "copy": "ours `SRC DST` (the plain copy)",
    "sha256sum": "`sha256sum FILE` (the same bytes on tmpfs)",
    "openssl": "`openssl dgst -sha256 FILE` (libcrypto, one core)",
    "sum-null": "ours `--checksum SRC null:`",
    "nbdcopy-pipe": "`/usr/bin/nbdcopy SRC - | sha256sum`",
    "read-null": "ours `SRC null:` (no hash)",
}
COPY_FACTOR = 1.1   # sum-copy <= 1.1 x the slower of copy and sha256sum
PIPE_FACTOR = 0.8   # sum-null <= 0.8 x nbdcopy-pipe
RSS_LIMIT_MIB = 40


def load(raw):
    result = {}
    for w in WORKLOADS:
        data = read(os.path.join(raw, f"{w}.json"))
        if not data:
            continue
        samples = json.loads(data)["results"]
        rows = {}
        for label, s in samples.items():
            if not s:
                continue
            rows[label] = {
                "wall": statistics.median(x["wall"] for x in s),
                "cpu": statistics.median(x["cpu"] for x in s),
                "also_cpu": statistics.median(x.get("also_cpu", 0) for x in s),
                "rss_mib": statistics.median(x["rss_kib"] for x in s) / 1024,
                "samples": s,
            }
        checks = {}
        for line in (read(os.path.join(raw, f"{w}.check"), "") or "").splitlines():
            label, got, want = line.split("\t")
            checks[label] = (got == want, got, want)
        size = read(os.path.join(raw, f"{w}.size"), "0").strip()
        allocated = read(os.path.join(raw, f"{w}.allocated"))
        cmds, servers = load_cmds(raw, w)
        result[w] = {"rows": rows, "checks": checks, "size_mib": int(size or 0),
                     "allocated": int(allocated) if allocated else None,
                     "cmds": cmds, "servers": servers}
    return result


def pairwise(wl, a, b):
    """The median of the rounds' ratios a / b."""
    sa, sb = wl["rows"][a]["samples"], wl["rows"][b]["samples"]
    return statistics.median(x["wall"] / y["wall"] for x, y in zip(sa, sb))


def targets(result):
    out = []
    for w, wl in result.items():
        rows = wl["rows"]
        if "sum-copy" in rows and "copy" in rows and "sha256sum" in rows:
            floor_label = max(("copy", "sha256sum"), key=lambda k: rows[k]["wall"])
            ratio = rows["sum-copy"]["wall"] / rows[floor_label]["wall"]
            out.append((ratio <= COPY_FACTOR,
                        f"{w}: --checksum SRC DST {fmt_time(rows['sum-copy']['wall'])} ≤ "
                        f"{COPY_FACTOR}× the slower of the plain copy "
                        f"({fmt_time(rows['copy']['wall'])}) and sha256sum "
                        f"({fmt_time(rows['sha256sum']['wall'])}): {fmt_ratio(ratio)}"))
        if "sum-null" in rows and "nbdcopy-pipe" in rows:
            ratio = pairwise(wl, "sum-null", "nbdcopy-pipe")
            out.append((ratio <= PIPE_FACTOR,
                        f"{w}: --checksum SRC null: ≤ {PIPE_FACTOR}× `/usr/bin/nbdcopy SRC - | "
                        f"sha256sum` ({fmt_time(rows['sum-null']['wall'])} vs "
                        f"{fmt_time(rows['nbdcopy-pipe']['wall'])}): {fmt_ratio(ratio)} "
                        "(median of the rounds' ratios)"))
        for label in ("sum-copy", "sum-null"):
            if label in rows:
                rss = rows[label]["rss_mib"]
                out.append((rss <= RSS_LIMIT_MIB,
                            f"{w}: {label} peak RSS {rss:.1f} MiB ≤ {RSS_LIMIT_MIB} MiB"))
        for label, (ok, got, want) in sorted(wl["checks"].items()):
            out.append((ok, f"{w}: {label} printed {got[:16]}…, sha256sum {want[:16]}…"))
    return out


def zero_rate(result):
    """GB/s at which checksum-sparse's zero runs were hashed, against openssl's rate on the
    pattern file: (GiB of the image) / wall, the data's reading included."""
    sparse, pattern = result.get("checksum-sparse"), result.get("checksum-pattern")
    if not sparse or "sum-null" not in sparse["rows"]:
        return None, None
    ours = sparse["size_mib"] / 1024 / sparse["rows"]["sum-null"]["wall"]
    floor = None
    if pattern and "openssl" in pattern["rows"]:
        floor = pattern["size_mib"] / 1024 / pattern["rows"]["openssl"]["wall"]
    return ours, floor


def table(wl):
    lines = ["| command | median wall | CPU (user + sys) | source server CPU | peak RSS "
             "| GiB/s | check |", "|---|---|---|---|---|---|---|"]
    for label, r in wl["rows"].items():
        check = wl["checks"].get(label)
        mark = "n/a" if check is None else ("right" if check[0] else "**WRONG**")
        rate = wl["size_mib"] / 1024 / r["wall"] if r["wall"] else 0
        lines.append(f"| {LABELS.get(label, label)} | {fmt_time(r['wall'])} | "
                     f"{fmt_time(r['cpu'])} | {fmt_time(r['also_cpu']) if r['also_cpu'] else '—'} "
                     f"| {r['rss_mib']:.1f} MiB | {rate:.2f} | {mark} |")
    return lines


def terminal(result, tlist):
    if not result:
        return []
    out = []
    for w, wl in result.items():
        out += [f"\n## {w} ({wl['size_mib']} MiB)\n"] + table(wl)
    ours, floor = zero_rate(result)
    if ours:
        out += [f"\nzero runs: {ours:.2f} GiB/s of image (openssl on data: "
                f"{floor:.2f} GiB/s)" if floor else f"\nzero runs: {ours:.2f} GiB/s"]
    out += ["\n## Checksum targets\n"]
    out += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
    return out


def section(result, tlist, meta, tidy):
    md = ["## Checksums a publisher prints (`--checksum`)", "",
          measured(meta) + f" {meta.get('runs', '?')} alternating rounds after "
          f"{meta.get('warmup', '?')} warm-up (bench/floor_rounds.py: every command once per "
          "round, in turn). sha256sum here is coreutils' (no SHA instructions, about "
          "300 MiB/s on this machine); openssl's is libcrypto's, which ours calls, with the "
          "CPU's SHA instructions: the hash alone on one core, the real floor of any "
          "sha256 of the data, shown beside the target's.", ""]
    for w, wl in result.items():
        md += [f"### {w}: {WORKLOADS[w]}", "", "```sh"]
        md += [f"# {tidy(s)}" for s in wl["servers"]]
        for label, cmd in wl["cmds"].items():
            md += [f"# {label}:", tidy(cmd)]
        md += ["```", ""] + table(wl) + [""]
    ours, floor = zero_rate(result)
    if ours:
        md += [f"checksum-sparse hashes its image at {ours:.2f} GiB/s" +
               (f", against openssl's {floor:.2f} GiB/s on data: the zero runs cost what "
                "hashing zero bytes costs, never a read" if floor else "") + ".", ""]
    md += ["Targets (issue 39): `--checksum SRC DST` at most 1.1× the slower of the plain "
           "copy and sha256sum of the same bytes from tmpfs; `--checksum SRC null:` at most "
           "0.8× `/usr/bin/nbdcopy SRC - | sha256sum`; peak RSS within 40 MiB; every digest "
           "equal to sha256sum's.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    md += [""]
    return md
