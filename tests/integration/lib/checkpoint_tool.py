#!/usr/bin/env python3
"""Reads --checkpoint files (GNU ddrescue mapfiles) and the nbdkit log of a
resumed copy's source, for the checkpoint-*.sh tests.  Independent of the
binary under test: it parses the text itself.

A mapfile, as nbdcopy writes it: comment lines ("#"; the identity lines
"# nbdcopy-KEY: VALUE" among them), then the status line "pos status pass",
then block lines "pos size status" (hex), contiguous from 0 to the
nbdcopy-size, '+' done, '?' not done.

Sub-commands (results on one line on stdout; a malformed file exits 1 with
the reason on stderr).  Several run in one start when separated by ";"
arguments ("check MAP ; holds MAP SRC DST"), one line each, in order: a
python start is the dearest thing a test does on a small machine.
  check MAP            the file is whole and consistent (the header line,
                       every identity line, the status line, blocks covering
                       [0, size) exactly, a status line that agrees with the
                       blocks, a final newline): prints "DONE SIZE RUNS"
  done MAP             the done ranges, "OFF+LEN,..." (merged; empty: none)
  donebytes MAP [A]    bytes the done ranges keep once each is shrunk inward
                       to whole blocks of A (an end at the size is kept), as
                       a resumed copy of alignment A skips them
  ddrescue-rescued MAP the "rescued:" value of "ddrescuelog -t" for the done
                       bytes, as ddrescuelog formats it ("1999 kB", "4096 B")
  checkall MAP...      check each file (snapshots): "N OF N", or exit 1
                       naming the first that is not whole
  holds MAP SRC DST    the first offset inside MAP's done ranges where the raw
                       image DST differs from SRC, or -1 (a done range must
                       hold the source's bytes; only those ranges are read)
  inside MAP RANGES    bytes of RANGES ("OFF+LEN,...") that MAP marks done
  rewrite MAP RANGES OUT
                       MAP with its blocks replaced: RANGES done, the rest
                       not (the identity lines kept), written to OUT
  fingerprint IMAGE    the source fingerprint nbdcopy records for a raw
                       image: "blkhash-sha256/64K@N:" and the sha256 blkhash
                       of the N (up to 16) blocks of 64 KiB spread over it
  lost MAP OLD         bytes OLD (another mapfile) marks done that MAP does not
  identity MAP KEY     the value of "# nbdcopy-KEY:"
  samples MAP          the reads a run makes before it copies anything, as
                       "OFF+LEN,...": the fingerprint (up to 16 blocks of
                       64 KiB spread over the source) and the check of the
                       destination (up to 8 done runs, their first 64 KiB)
  reads MAP LOG A      what the Read requests of LOG (nbdkit's log filter on
                       the source of a run resumed from MAP) did, with the
                       sample reads (above) taken out, each matched once:
                       "SAMPLE_READS COPY_READS COPY_BYTES INSIDE" where
                       INSIDE is the bytes of copy reads inside the done
                       ranges shrunk inward to A (none may be re-read)
  json FILE EXPR       EXPR (Python) evaluated with `r` the --json report in
                       FILE (not a mapfile)
"""

import os
import sys

# (re, json, hashlib and struct are imported by the sub-commands that use
# them: most runs check a mapfile, and these imports would double the
# cost of a python start.)
START = r"connection=(\d+) (\w+) id=(\d+) offset=0x([0-9a-fA-F]+) count=0x([0-9a-fA-F]+)"
SAMPLE = 64 * 1024
FINGERPRINT_SAMPLES = 16
DESTINATION_SAMPLES = 8


class Bad(Exception):
    pass


def parse(path):
    """(identity dict, size, [(off, len, status)]) of a mapfile, checked."""
    with open(path, "rb") as f:
        raw = f.read()
    if not raw:
        raise Bad(f"{path}: empty")
    if not raw.endswith(b"\n"):
        raise Bad(f"{path}: the last line has no newline (a partial write?)")
    lines = raw.decode("utf-8", "replace").split("\n")[:-1]
    if not lines[0].startswith("# Mapfile. Created by nbdcopy"):
        raise Bad(f"{path}: line 1 is not the header: {lines[0]!r}")
    identity, status, blocks = {}, None, []
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            # "# nbdcopy-KEY: VALUE" (KEY [a-z]+; ": VALUE" may be ":")
            key, colon, value = line[len("# nbdcopy-"):].partition(":")
            if (line.startswith("# nbdcopy-") and colon and key
                    and all("a" <= c <= "z" for c in key)
                    and (not value or value.startswith(" "))):
                if key in identity:
                    raise Bad(f"{path}: line {number}: a second nbdcopy-{key}")
                identity[key] = value[1:]
            continue
        words = line.split()
        if not words:
            continue
        if status is None:
            if len(words) != 3 or words[1] not in "?+" or len(words[1]) != 1:
                raise Bad(f"{path}: line {number}: not a status line: {line!r}")
            status = (int(words[0], 16), words[1], number)
            continue
        if len(words) != 3 or words[2] not in ("+", "?"):
            raise Bad(f"{path}: line {number}: not a block line: {line!r}")
        blocks.append((int(words[0], 16), int(words[1], 16), words[2], number))
    for key in ("source", "destination", "size", "settings", "fingerprint"):
        if key not in identity:
            raise Bad(f"{path}: no nbdcopy-{key} line")
    if status is None:
        raise Bad(f"{path}: no status line")
    size = int(identity["size"])
    pos = 0
    for off, n, st, number in blocks:
        if off != pos or n == 0:
            raise Bad(f"{path}: line {number}: block at {off:#x}+{n:#x}, expected one at {pos:#x}")
        pos = off + n
    if pos != size:
        raise Bad(f"{path}: the blocks end at {pos:#x}, not at the size {size:#x}")
    todo = [off for off, n, st, _ in blocks if st == "?"]
    want = (todo[0], "?") if todo else (size, "+")
    if status[:2] != want:
        raise Bad(f"{path}: line {status[2]}: status {status[0]:#x} {status[1]}, "
                  f"expected {want[0]:#x} {want[1]}")
    return identity, size, [(off, n, st) for off, n, st, _ in blocks]


def done_runs(blocks):
    runs = []
    for off, n, st in blocks:
        if st != "+":
            continue
        if runs and runs[-1][1] == off:
            runs[-1][1] = off + n
        else:
            runs.append([off, off + n])
    return [(a, b) for a, b in runs]


def aligned_inward(runs, alignment, size):
    out = []
    for a, b in runs:
        a2 = (a + alignment - 1) // alignment * alignment
        b2 = b if b >= size else b // alignment * alignment
        if b2 > a2:
            out.append((a2, b2))
    return out


def samples(size, runs):
    """The (offset, length) reads made before copying, in order."""
    out = []
    blocks = (size + SAMPLE - 1) // SAMPLE
    count = min(blocks, FINGERPRINT_SAMPLES)
    for i in range(count):
        block = 0 if count == 1 else i * (blocks - 1) // (count - 1)
        out.append((block * SAMPLE, min(SAMPLE, size - block * SAMPLE)))
    count = min(len(runs), DESTINATION_SAMPLES)
    for i in range(count):
        a, b = runs[0 if count == 1 else i * (len(runs) - 1) // (count - 1)]
        out.append((a, min(b - a, SAMPLE)))
    return out


def reads(log):
    import re
    start = re.compile(START)
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            m = start.search(line)
            if m and m.group(2) == "Read":
                out.append((int(m.group(4), 16), int(m.group(5), 16)))
    return out


def ddrescue_number(n):
    units = ["B", "kB", "MB", "GB", "TB", "PB"]
    i = 0
    while n > 999999:
        n //= 1000
        i += 1
    return f"{n} {units[i]}"


def fingerprint(image):
    import hashlib
    import struct
    with open(image, "rb") as f:
        data = f.read()
    size = len(data)
    outer, length = hashlib.sha256(), 0
    blocks = (size + SAMPLE - 1) // SAMPLE
    count = min(blocks, FINGERPRINT_SAMPLES)
    for off, n in samples(size, [])[:count]:
        outer.update(hashlib.sha256(data[off:off + n]).digest())
        length += n
    outer.update(struct.pack("<Q", length))
    return f"blkhash-sha256/64K@{count}:{outer.hexdigest()}"


def first_difference(src, dst, runs):
    """The first offset inside runs where the files src and dst differ (one
    ending counts as a difference), or -1.  Only the runs are read, a few
    MiB at a time."""
    chunk = 4 * 1024 * 1024
    with open(src, "rb") as fs, open(dst, "rb") as fd:
        for a, b in runs:
            for off in range(a, b, chunk):
                n = min(chunk, b - off)
                x, y = os.pread(fs.fileno(), n, off), os.pread(fd.fileno(), n, off)
                if x != y:
                    return off + next((i for i, (p, q) in enumerate(zip(x, y)) if p != q),
                                      min(len(x), len(y)))
    return -1


def parse_ranges(text):
    out = []
    for item in filter(None, text.split(",")):
        off, n = item.split("+")
        out.append((int(off, 0), int(off, 0) + int(n, 0)))
    return out


def render(path, runs, out):
    """path's text with its status line and blocks replaced."""
    _, size, _ = parse(path)
    with open(path) as f:
        head = [line for line in f.read().split("\n") if line.startswith("#")]
    blocks, pos = [], 0
    for a, b in sorted(runs):
        if a > pos:
            blocks.append((pos, a - pos, "?"))
        blocks.append((a, b - a, "+"))
        pos = b
    if pos < size:
        blocks.append((pos, size - pos, "?"))
    todo = [off for off, _, st in blocks if st == "?"]
    status = f"0x{todo[0]:08X}     ?" if todo else f"0x{size:08X}     +"
    text = "\n".join(head[:-2]) + "\n" + head[-2] + "\n" + status + "               1\n"
    text += head[-1] + "\n" + "".join(f"0x{a:08X}  0x{n:08X}  {st}\n" for a, n, st in blocks)
    with open(out, "w") as f:
        f.write(text)


def main(argv):
    jobs, job = [], []
    for word in argv[1:]:
        if word == ";":
            jobs.append(job)
            job = []
        else:
            job.append(word)
    jobs.append(job)
    for job in jobs:
        run([argv[0]] + job)
        sys.stdout.flush()


def run(argv):
    if len(argv) < 3:
        sys.exit("checkpoint_tool: no sub-command and file in " + repr(argv[1:]))
    cmd, path = argv[1], argv[2]
    if cmd == "json":
        import json
        with open(path) as f:
            r = json.load(f)  # noqa: F841 (used by the expression)
        print(eval(argv[3]))
        return
    if cmd == "fingerprint":
        print(fingerprint(path))
        return
    if cmd == "checkall":
        for i, one in enumerate(argv[2:]):
            try:
                parse(one)
            except (Bad, ValueError, OSError) as e:
                sys.exit(f"checkpoint_tool: snapshot {i + 1} of {len(argv) - 2}: {e}")
        print(len(argv) - 2, "OF", len(argv) - 2)
        return
    try:
        identity, size, blocks = parse(path)
    except (Bad, ValueError, OSError) as e:
        sys.exit(f"checkpoint_tool: {e}")
    runs = done_runs(blocks)
    if cmd == "check":
        print(sum(b - a for a, b in runs), size, len(runs))
    elif cmd == "done":
        print(",".join(f"{a}+{b - a}" for a, b in runs))
    elif cmd == "donebytes":
        alignment = int(argv[3]) if len(argv) > 3 else 1
        print(sum(b - a for a, b in aligned_inward(runs, alignment, size)))
    elif cmd == "ddrescue-rescued":
        print(ddrescue_number(sum(b - a for a, b in runs)))
    elif cmd == "lost":
        try:
            _, _, old = parse(argv[3])
        except (Bad, ValueError, OSError) as e:
            sys.exit(f"checkpoint_tool: {e}")
        print(sum(b - a - sum(max(0, min(b, y) - max(a, x)) for x, y in runs)
                  for a, b in done_runs(old)))
    elif cmd == "holds":
        try:
            print(first_difference(argv[3], argv[4], runs))
        except OSError as e:
            sys.exit(f"checkpoint_tool: {e}")
    elif cmd == "inside":
        print(sum(max(0, min(b, y) - max(a, x)) for a, b in parse_ranges(argv[3])
                  for x, y in runs))
    elif cmd == "rewrite":
        render(path, parse_ranges(argv[3]), argv[4])
    elif cmd == "identity":
        print(identity[argv[3]])
    elif cmd == "samples":
        print(",".join(f"{a}+{n}" for a, n in samples(size, runs)))
    elif cmd == "reads":
        log, alignment = argv[3], int(argv[4])  # reads MAP LOG A
        pending = samples(size, runs)
        inside_ranges = aligned_inward(runs, alignment, size)
        sampled = copies = copied = inside = 0
        for off, n in reads(log):
            if (off, n) in pending:
                pending.remove((off, n))
                sampled += 1
                continue
            copies += 1
            copied += n
            inside += sum(max(0, min(off + n, b) - max(off, a)) for a, b in inside_ranges)
        print(sampled, copies, copied, inside)
    else:
        sys.exit("checkpoint_tool: unknown sub-command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
