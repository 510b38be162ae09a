#!/usr/bin/env python3
"""Analyse nbdkit log filter files for the engine-*.sh tests.

The log filter (nbdkit 1.32) writes one line when a request starts and one
when it finishes, e.g.

  2026-01-01 10:00:00.000001 connection=2 Read id=3 offset=0x100000 count=0x100000 ...
  2026-01-01 10:00:00.000502 connection=2 ...Read id=3 return=0
  2026-01-01 10:00:00.000600 connection=2 Zero id=4 offset=0x0 count=0x1000 trim=1 fua=0 fast=0 ...

Connection numbers are unique within one nbdkit process; request ids are
unique within one connection.  Lines are written in the order things happen,
so walking the file gives what the server had outstanding at every moment.

Several sub-commands may run in one start, separated by "--" arguments
(a python3 start costs more than most analyses):
  engine-logtool.py uncovered LOG Read REF -- overlap LOG Read -- sum LOG Read
prints one line per sub-command, in order; each LOG is read once.

Sub-commands (all print plain integers on one line):
  maxout LOG TYPE        most TYPE requests, and most TYPE bytes, outstanding
                         at once on any one connection: "COUNT BYTES"
  conns LOG TYPE         distinct connections that sent at least one TYPE
  connects LOG           Connect lines (connections opened)
  uncovered LOG TYPES REF
                         bytes of REF that are not zero yet are not inside
                         any request of TYPES (comma-separated)
  holebytes LOG TYPES REF GRAN
                         bytes of TYPES requests that fall inside GRAN-aligned
                         blocks of REF that are entirely zero
  span LOG TYPES SIZE    bytes of [0, SIZE) not covered by TYPES requests
  overlap LOG TYPES      bytes covered by more than one TYPES request
  outside LOG TYPES SIZE bytes of TYPES requests beyond SIZE
  outranges LOG TYPES RANGES
                         bytes of TYPES requests outside RANGES ("OFF+LEN,...")
  unspanned LOG TYPES RANGES
                         bytes of RANGES not covered by TYPES requests
  misaligned LOG TYPES MIN MAX SIZE
                         TYPES requests that break block-size rules: start or
                         end off a MIN boundary (an end at SIZE is allowed),
                         or Read/Write longer than MAX (0: no maximum)
  sum LOG TYPES          the count= bytes of all TYPES requests (lib.sh's
                         log_sum)
  count LOG TYPES        the number of TYPES requests (lib.sh's log_count)
"""

import re
import sys

START = re.compile(
    r"connection=(\d+) (\w+) id=(\d+) offset=0x([0-9a-fA-F]+) count=0x([0-9a-fA-F]+)")
END = re.compile(r"connection=(\d+) \.\.\.(\w+) id=(\d+) ")
CONNECT = re.compile(r"connection=\d+ Connect ")


_parsed = {}


def events(log):
    """The log's request lines, in order, parsed once per file:
    ("S", conn, type, id, offset, count) when a request starts,
    ("E", conn, type, id) when it is answered, ("C",) for a Connect line."""
    if log not in _parsed:
        out = []
        with open(log, errors="replace") as f:
            for line in f:
                m = START.search(line)
                if m:
                    out.append(("S", m.group(1), m.group(2), m.group(3),
                                int(m.group(4), 16), int(m.group(5), 16)))
                    continue
                m = END.search(line)
                if m:
                    out.append(("E", m.group(1), m.group(2), m.group(3)))
                    continue
                if CONNECT.search(line):
                    out.append(("C",))
        _parsed[log] = out
    return _parsed[log]


def starts(log, types):
    """(conn, type, id, offset, count) of every request of the given types."""
    return [e[1:] for e in events(log) if e[0] == "S" and e[2] in types]


def requests(log, types):
    """(offset, count) of every request of the given types."""
    return [(off, n) for _, _, _, off, n in starts(log, types)]


def merge(ranges):
    merged = []
    for off, n in sorted(ranges):
        if n == 0:
            continue
        if merged and off <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], off + n)
        else:
            merged.append([off, off + n])
    return merged


def maxout(log, kind):
    outstanding = {}  # connection -> {id: count}
    best_n = best_bytes = 0
    for e in events(log):
        if e[0] == "S" and e[2] == kind:
            reqs = outstanding.setdefault(e[1], {})
            reqs[e[3]] = e[5]
            best_n = max(best_n, len(reqs))
            best_bytes = max(best_bytes, sum(reqs.values()))
        elif e[0] == "E" and e[2] == kind:
            outstanding.get(e[1], {}).pop(e[3], None)
    return best_n, best_bytes


def conns(log, kind):
    return len(set(conn for conn, _, _, _, _ in starts(log, {kind})))


def connects(log):
    return sum(1 for e in events(log) if e[0] == "C")


def nonzero_blocks(ref, gran):
    """Yield (offset, length, all_zero) for GRAN-sized blocks of REF."""
    with open(ref, "rb") as f:
        off = 0
        while True:
            block = f.read(gran)
            if not block:
                return
            yield off, len(block), block.count(0) == len(block)
            off += len(block)


def uncovered(log, types, ref):
    merged = merge(requests(log, types))
    # The gaps between requests, then the non-zero bytes of REF in them.
    gaps = []
    pos = 0
    for a, b in merged:
        if a > pos:
            gaps.append((pos, a))
        pos = max(pos, b)
    gaps.append((pos, None))
    missing = 0
    with open(ref, "rb") as f:
        for a, b in gaps:
            f.seek(a)
            while b is None or a < b:
                n = 1 << 20 if b is None else min(1 << 20, b - a)
                chunk = f.read(n)
                if not chunk:
                    break
                missing += len(chunk) - chunk.count(0)
                a += len(chunk)
    return missing


def holebytes(log, types, ref, gran):
    zero_blocks = set(off // gran for off, n, z in nonzero_blocks(ref, gran) if z)
    total = 0
    for off, n in requests(log, types):
        end = off + n
        b = off // gran
        while b * gran < end:
            if b in zero_blocks:
                total += min(end, (b + 1) * gran) - max(off, b * gran)
            b += 1
    return total


def span(log, types, size):
    covered = 0
    for a, b in merge(requests(log, types)):
        a, b = max(a, 0), min(b, size)
        if b > a:
            covered += b - a
    return size - covered


def overlap(log, types):
    reqs = requests(log, types)
    return sum(n for _, n in reqs) - sum(b - a for a, b in merge(reqs))


def outside(log, types, size):
    return sum(max(0, off + n - max(off, size)) for off, n in requests(log, types))


def parse_ranges(text):
    out = []
    for item in filter(None, text.split(",")):
        off, n = item.split("+")
        out.append((int(off, 0), int(n, 0)))
    return out


def covered_bytes(ranges, a, b):
    """Bytes of [a, b) inside the merged ranges."""
    return sum(max(0, min(b, y) - max(a, x)) for x, y in merge(ranges))


def outranges(log, types, ranges):
    allowed = parse_ranges(ranges)
    return sum(n - covered_bytes(allowed, off, off + n) for off, n in requests(log, types))


def unspanned(log, types, ranges):
    reqs = requests(log, types)
    return sum(b - a - covered_bytes(reqs, a, b) for a, b in merge(parse_ranges(ranges)))


def misaligned(log, types, minimum, maximum, size):
    bad = 0
    for _, kind, _, off, n in starts(log, types):
        end = off + n
        if off % minimum or (end % minimum and end != size):
            bad += 1
        elif maximum and kind in ("Read", "Write") and n > maximum:
            bad += 1
    return bad


def main(argv):
    # CMD ARGS [-- CMD ARGS]...: one sub-command after another.
    cmds, cur = [], []
    for a in argv[1:]:
        if a == "--":
            cmds.append(cur)
            cur = []
        else:
            cur.append(a)
    cmds.append(cur)
    for c in cmds:
        if not c:
            sys.exit("empty sub-command")
        run(["engine-logtool.py"] + c)


def run(argv):
    cmd = argv[1]
    if cmd == "maxout":
        print(*maxout(argv[2], argv[3]))
    elif cmd == "conns":
        print(conns(argv[2], argv[3]))
    elif cmd == "connects":
        print(connects(argv[2]))
    elif cmd == "uncovered":
        print(uncovered(argv[2], set(argv[3].split(",")), argv[4]))
    elif cmd == "holebytes":
        print(holebytes(argv[2], set(argv[3].split(",")), argv[4], int(argv[5])))
    elif cmd == "span":
        print(span(argv[2], set(argv[3].split(",")), int(argv[4])))
    elif cmd == "overlap":
        print(overlap(argv[2], set(argv[3].split(","))))
    elif cmd == "outside":
        print(outside(argv[2], set(argv[3].split(",")), int(argv[4])))
    elif cmd == "outranges":
        print(outranges(argv[2], set(argv[3].split(",")), argv[4]))
    elif cmd == "unspanned":
        print(unspanned(argv[2], set(argv[3].split(",")), argv[4]))
    elif cmd == "misaligned":
        print(misaligned(argv[2], set(argv[3].split(",")), int(argv[4]), int(argv[5]),
                         int(argv[6])))
    elif cmd == "sum":
        print(sum(n for _, n in requests(argv[2], set(argv[3].split(",")))))
    elif cmd == "count":
        print(len(requests(argv[2], set(argv[3].split(",")))))
    else:
        sys.exit("unknown sub-command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
