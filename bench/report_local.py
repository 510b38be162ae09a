"""The fragmented, qcow2-to-file and file-to-file workloads of bench/run.sh
(bench/local_workloads.sh): tables, targets and their part of performance.md.

Raw files per workload W: W.json (hyperfine), W.cmds, W.check (LABEL RC CHECK
ALLOCATED-BYTES), W.LABEL.rss, W.size; file-to-file also W-disk.json, the
informational run into a file on the disk.
"""
from reportlib import base_row, fmt_time, load_checks, load_cmds, load_rows, load_size, measured

LOCAL_WORKLOADS = ["fragmented", "qcow2-to-file", "file-to-file", "file-to-block"]
STRESSES = {
    "fragmented": "hundreds of thousands of small extents (512-byte runs) into a file",
    "qcow2-to-file": "a real ext4 image in qcow2, through qemu-nbd, into a file",
    "file-to-file": "local file to local file: the raw ext4 image",
    "file-to-block": "the raw ext4 image into a block device (a loop device over tmpfs)",
}
LABELS = {
    "ours": "**ours**",
    "nbdcopy": "/usr/bin/nbdcopy",
    "ours-null": "ours → `null:` (our read limit)",
    "qemu-img": "qemu-img convert",
    "ours-disk": "ours `--flush` → file on the disk (*informational*)",
}
ORDER = ["ours", "nbdcopy", "ours-null", "qemu-img"]
# workload -> (base label of the target, factor): ours wall <= factor x base wall.
TARGETS = {
    "fragmented": ("nbdcopy", 0.8),
    "qcow2-to-file": ("ours-null", 1.1),
    "file-to-file": ("qemu-img", 0.8),
    "file-to-block": ("nbdcopy", 0.9),
}
RSS_LIMIT_MIB = 40


def add_checks(raw, w, rows, size_mib):
    checks = load_checks(raw, w)
    for label, row in rows.items():
        chk = checks.get(label)
        if not chk:
            row["check"], row["check_ok"] = "not checked", False
            continue
        rc, result = chk[0], chk[1]
        alloc = chk[2] if len(chk) > 2 else ""
        if rc != "0":
            row["check"], row["check_ok"] = f"exit {rc}", False
            continue
        row["check"], row["check_ok"] = result, result in ("identical", "n/a")
        if alloc:
            row["check"] += f", {int(alloc) / 2**20:.0f} of {size_mib} MiB allocated"


def load(raw, w):
    rows = load_rows(raw, w)
    if rows is None:
        return None
    size_mib = load_size(raw, w)
    add_checks(raw, w, rows, size_mib)
    disk = load_rows(raw, f"{w}-disk", rss_prefix=w) or {}
    add_checks(raw, w, disk, size_mib)
    cmds, servers = load_cmds(raw, w)
    return {"rows": rows, "disk": disk, "cmds": cmds, "servers": servers, "size_mib": size_mib}


def table_rows(w, wl, rows):
    base_label = TARGETS[w][0]
    base = wl["rows"].get(base_label)
    out = []
    for label in ORDER + ["ours-disk"]:
        if label not in rows:
            continue
        out.append(base_row(LABELS.get(label, label), rows[label], label == base_label, base,
                            wl["size_mib"]))
    return out


def table(w, wl):
    head = ["| command | median wall | CPU (user+sys) | peak RSS | wall / base | size / wall "
            "| check |", "|---|---:|---:|---:|---:|---:|---|"]
    out = head + table_rows(w, wl, wl["rows"])
    if wl["disk"]:
        out += ["", "Informational, not a target: the same copy into a file on the real disk "
                "(`--flush`, so the time includes the writeback; `sync` before every run).", ""]
        out += head + table_rows(w, wl, wl["disk"])
    return out


def targets(results):
    out = []
    for w in LOCAL_WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        rows = wl["rows"]
        ours = rows.get("ours")
        base_label, factor = TARGETS[w]
        base = rows.get(base_label)
        if ours is None:
            continue
        why = []
        for name, r in (("ours", ours), (base_label, base)):
            if r is None:
                why.append(f"{name} not run")
            elif r["failed"]:
                why.append(f"{name} failed")
            elif not r["check_ok"]:
                why.append(f"{name}: {r['check']}")
        why_text = "" if not why else " — " + "; ".join(why)
        if base is not None:
            ratio = ours["wall"] / base["wall"]
            out.append((not why and ratio <= factor,
                        f"{w}: wall ≤ {factor} × {LABELS[base_label]}: "
                        f"{fmt_time(ours['wall'])} vs {fmt_time(factor * base['wall'])} "
                        f"({ratio:.2f}×){why_text}"))
        rss = ours["rss_mib"]
        out.append((rss is not None and rss <= RSS_LIMIT_MIB and not ours["failed"],
                    f"{w}: peak RSS ≤ {RSS_LIMIT_MIB} MiB (default settings): "
                    + (f"{rss:.1f} MiB" if rss is not None else "not measured")
                    + (" — ours failed" if ours["failed"] else "")))
        for label in ORDER:
            r = rows.get(label)
            if r is not None and not r["check_ok"]:
                out.append((False, f"{w}: check of {label}: {r['check']}"))
    return out


def section(results, tlist, meta, tidy):
    """The markdown of the local workloads: method, commands, tables, targets."""
    md = ["## Local files and fragmented sources", "",
          measured(meta) + " File destinations are on tmpfs (`/dev/shm`), removed before every run "
          "(`--prepare 'rm -f DST'`): on this shared disk, the page-cache writeback of one "
          "run would land on whichever command runs next. Each workload is one hyperfine run "
          f"(`-N`, {meta.get('runs', '?')} runs after {meta.get('warmup', '?')} warm-up). "
          "**wall / base** is against the base of the workload's target. **check**: one "
          "extra run per command into a fresh file, compared with the source (`cmp` against "
          "the raw image, or on fragmented against a copy made by /usr/bin/nbdcopy: "
          "`qemu-img compare` takes minutes on that source), with the file's allocated size. "
          "**peak RSS**: `/usr/bin/time -f %M` on that run; a copier reaps its `[ qemu-nbd ]` "
          "server and the peak would then be the server's, so for the qcow2 source the RSS "
          "run reads the same qemu-nbd, started on a socket, with `--connections=1` (the plan "
          "a `[ CMD ]` source gets).", "",
          "- **fragmented**: ours against /usr/bin/nbdcopy only: `qemu-img convert` takes "
          "minutes on this source and is left out.",
          "- **qcow2-to-file**: qemu-img reads the qcow2 natively; it is the reference, not "
          "the target. The target is our own read limit, the same source into `null:`.",
          "- **file-to-file**: the raw image of the same file system.",
          "- **file-to-block**: the same image into a loop device over a file of its size on "
          "tmpfs (root only). The device is discarded whole before every run (`blkdiscard`), "
          "never removed; a block device's last close waits for its page cache to be written "
          "back, so the times include that writeback. **check** compares the device with the "
          "image; the allocated size is the backing file's.", "",
          "File-system image: "
          + f"`mke2fs -t ext4 -d {meta.get('fsimage_dir', '?')}` (the image is about 1.5 × "
          "the files), converted to qcow2; built once and cached in `bench/out/fsimage/`.", ""]
    for w in LOCAL_WORKLOADS:
        wl = results.get(w)
        if not wl:
            continue
        md += [f"### {w}: {STRESSES[w]}", "", "```sh"]
        md += ["# set-up:"] + [f"#   {tidy(s)}" for s in wl["servers"]]
        for label in ORDER + ["ours-disk"]:
            if label in wl["cmds"]:
                md += [f"# {label}:", tidy(wl["cmds"][label])]
        md += ["```", ""]
        md += table(w, wl)
        md += ["", f"Size {wl['size_mib']} MiB.", ""]
    md += ["### Targets (local files, fragmented)", "",
           "From the issues: fragmented ≤ 0.8 × /usr/bin/nbdcopy; qcow2-to-file ≤ 1.1 × the "
           "same source to `null:`; file-to-file ≤ 0.8 × `qemu-img convert`; file-to-block "
           "≤ 0.9 × /usr/bin/nbdcopy (issue 27); peak RSS ≤ 40 MiB; every copy identical to "
           "its source.", ""]
    md += [f"- {'PASS' if ok else '**FAIL**'}: {text}" for ok, text in tlist]
    npass = sum(1 for ok, _ in tlist if ok)
    md += ["", f"{npass} of {len(tlist)} local targets met.", ""]
    return md


def terminal(results, tlist):
    lines = []
    for w in LOCAL_WORKLOADS:
        if w in results:
            lines += ["", f"## {w} ({results[w]['size_mib']} MiB)", ""] + table(w, results[w])
    if tlist:
        lines += ["", "## Local targets", ""]
        lines += [f"{'PASS' if ok else 'FAIL'}  {text}" for ok, text in tlist]
        npass = sum(1 for ok, _ in tlist if ok)
        lines += ["", f"{npass} passed, {len(tlist) - npass} failed"]
    return lines
