"""The incremental workload of bench/run.sh (bench/incremental_workload.sh): an
incremental copy from a qemu dirty bitmap against the same amount of contiguous data
and against full copies; its table, targets and part of performance.md.

Raw files: incremental.json (hyperfine), .cmds, .check (LABEL RC CHECK), .LABEL.rss,
.size, .dirty and .dirty-contiguous (the dry run's "dirty=... ranges=..." lines).
"""
import os

from reportlib import (base_row, fmt_ratio, load_checks, load_cmds, load_rows, load_size, measured,
                       read)

W = "incremental"
LABELS = {
    "incremental": "**ours `--dirty-bitmap=b0`** (1 % scattered)",
    "contiguous": "ours `--dirty-bitmap=b1` (1 % contiguous)",
    "ours-full": "ours, full copy",
    "nbdcopy-full": "/usr/bin/nbdcopy, full copy",
}
ORDER = ["incremental", "contiguous", "ours-full", "nbdcopy-full"]
CONTIGUOUS_FACTOR = 2.0  # incremental <= 2 x contiguous
FULL_FACTOR = 5.0        # incremental <= full / 5


def dirty_figures(raw, suffix):
    """{"dirty": bytes, "ranges": n, ...} from the dry run's line, or {}."""
    line = (read(os.path.join(raw, f"{W}.{suffix}"), "") or "").strip()
    out = {}
    for item in line.split():
        key, _, value = item.partition("=")
        if value.isdigit():
            out[key] = int(value)
    return out


def load(raw):
    rows = load_rows(raw, W)
    if rows is None:
        return None
    checks = load_checks(raw, W)
    for label, row in rows.items():
        chk = checks.get(label)
        if not chk:
            row["check"], row["check_ok"] = "not checked", False
        elif chk[0] != "0":
            row["check"], row["check_ok"] = f"exit {chk[0]}", False
        else:
            row["check"], row["check_ok"] = chk[1], chk[1] in ("identical", "n/a")
    cmds, servers = load_cmds(raw, W)
    return {"rows": rows, "cmds": cmds, "servers": servers, "size_mib": load_size(raw, W),
            "dirty": dirty_figures(raw, "dirty"),
            "contiguous": dirty_figures(raw, "dirty-contiguous")}


def targets(wl):
    if not wl:
        return []
    rows, out = wl["rows"], []
    inc = rows.get("incremental")
    if inc is None or inc["failed"]:
        return [(False, "the incremental copy failed or did not run")]

    def compare(base_label, factor, text):
        base = rows.get(base_label)
        if base is None or base["failed"]:
            out.append((False, f"{text}: {base_label} failed or did not run"))
            return
        limit = base["wall"] * factor
        out.append((inc["wall"] <= limit,
                    f"{text}: {inc['wall']:.3f} s vs {base['wall']:.3f} s "
                    f"({fmt_ratio(inc['wall'] / base['wall'])}, limit {fmt_ratio(factor)})"))

    compare("contiguous", CONTIGUOUS_FACTOR,
            "incremental ≤ 2 × the same amount of contiguous data")
    compare("ours-full", 1 / FULL_FACTOR, "incremental ≤ 1/5 of ours' full copy")
    compare("nbdcopy-full", 1 / FULL_FACTOR, "incremental ≤ 1/5 of /usr/bin/nbdcopy's full copy")
    out.append((inc["check_ok"], f"incremental copy onto the old copy: {inc['check']}"))
    return out


def table(wl):
    lines = ["| command | median wall | CPU (user + sys) | peak RSS | wall / incremental "
             "| MiB moved / wall | check |", "|---|---|---|---|---|---|---|"]
    base = wl["rows"].get("incremental")
    # What each command moves: the dirty bytes, or the whole image.
    moved = {"incremental": wl["dirty"].get("dirty", 0) / 2**20,
             "contiguous": wl["contiguous"].get("dirty", 0) / 2**20}
    for label in ORDER:
        r = wl["rows"].get(label)
        if r is not None:
            lines.append(base_row(LABELS[label], r, label == "incremental", base,
                                  moved.get(label) or wl["size_mib"]))
    return lines


def describe_dirty(figures):
    if not figures:
        return "?"
    ranges = figures.get("ranges", "?")
    return (f"{figures.get('dirty', 0) / 2**20:.1f} MiB in {ranges} "
            f"range{'' if ranges == 1 else 's'}, {figures.get('clean', 0) / 2**20:.0f} MiB "
            "left alone")


def terminal(wl, tlist):
    if not wl:
        return []
    out = [f"\n## incremental ({wl['size_mib']} MiB)\n",
           f"dirty (b0): {describe_dirty(wl['dirty'])}",
           f"dirty (b1): {describe_dirty(wl['contiguous'])}", ""]
    out += table(wl)
    out += ["\n## Incremental targets\n"]
    out += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
    return out


def section(wl, tlist, tidy, meta):
    md = ["## Incremental copies (`--dirty-bitmap`)", "",
          measured(meta) + f" {meta.get('runs', '?')} runs after "
          f"{meta.get('warmup', '?')} warm-up. "
          f"A {wl['size_mib'] / 1024:g} GiB qcow2 image with 10 % data, the full copy taken at a checkpoint, then 1 % of the "
          "image rewritten in scattered 64 KiB clusters: the incremental copy from the dirty "
          "bitmap onto the old copy, against the same amount of data as one contiguous range "
          "(another bitmap of the same image, copied the same way) and against full copies "
          "of the image by ours and by /usr/bin/nbdcopy. Source `[ qemu-nbd -r -f qcow2 … ]` "
          "(`-B NAME` for the bitmaps); destinations are files on tmpfs: the incremental "
          "ones an existing copy (every run writes the same bytes again), the full ones a "
          "new file each run. One hyperfine run, commands side by side.", "",
          "```sh", "# image, built once and cached (bench/out/incremental/):"]
    md += [f"#   {tidy(s)}" for s in wl["servers"]]
    for label in ORDER:
        if label in wl["cmds"]:
            md += [f"# {label}:", tidy(wl["cmds"][label])]
    md += ["```", "",
           f"- dirty, scattered (b0): {describe_dirty(wl['dirty'])}",
           f"- dirty, contiguous (b1): {describe_dirty(wl['contiguous'])}", ""]
    md += table(wl)
    md += ["", "MiB moved: the dirty bytes for the incremental rows, the image's size (holes "
           "included) for the full copies.", "",
           "Check: one extra run per command from a qemu-nbd on a socket (peak RSS), "
           "the incremental one onto a fresh copy of the old image; `qemu-img compare` "
           "against the qcow2 image (the contiguous run copies one range only: n/a).", "",
           "Targets (issue 9): the incremental copy takes at most 2× the time of copying the "
           "same amount of contiguous data the same way, and at least 5× less than a full "
           "copy.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    md += [""]
    return md
