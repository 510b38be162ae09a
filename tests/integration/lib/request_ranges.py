#!/usr/bin/env python3
"""Whether a libnbd copy/ script's request list differs from the one it
expects only in how the ranges are split into requests.

Usage: request_ranges.py SCRIPT LOG

SCRIPT is one of libnbd's copy-sparse*.sh: it logs each request nbdkit's
eval plugin receives ("pwrite COUNT OFFSET", "zero COUNT OFFSET [FLAGS]"),
prints them after a line "Output:", and fails unless they equal the list
written in it (after `!= "`). LOG is what it printed. Each list's requests
of one kind (the verb and its flags) are merged where one ends where the
next begins; the two merged lists must be equal, and ours must have no
request overlapping another of its kind. Exit 0 when they are, else 1 with
both merged lists.
"""
import re
import sys

REQUEST = re.compile(r"^(pwrite|zero|trim) (\d+) (\d+)((?: \S+)*)$")


def parse(lines):
    requests = []
    for line in lines:
        m = REQUEST.match(line)
        if not m:
            break
        requests.append((m.group(1) + m.group(4), int(m.group(3)), int(m.group(2))))
    return requests


def expected(script_text):
    start = script_text.index('!= "') + len('!= "')
    end = script_text.index('" ]', start)
    return parse(script_text[start:end].split("\n"))


def printed(log_lines):
    at = log_lines.index("Output:") + 1
    while at < len(log_lines) and log_lines[at].startswith("+"):
        at += 1  # set -x's trace of the cat
    return parse(log_lines[at:])


def merged(requests):
    """{kind: [(offset, end)...]}; None when two requests overlap."""
    by_kind = {}
    for kind, offset, count in sorted(requests):
        runs = by_kind.setdefault(kind, [])
        if runs and offset < runs[-1][1]:
            return None
        if runs and offset == runs[-1][1]:
            runs[-1] = (runs[-1][0], offset + count)
        else:
            runs.append((offset, offset + count))
    return by_kind


def main():
    script, log = sys.argv[1:3]
    with open(script) as f:
        want = expected(f.read())
    with open(log, errors="replace") as f:
        got = printed(f.read().split("\n"))
    if not want or not got:
        print(f"request_ranges: no requests read (script {len(want)}, log {len(got)})")
        return 1
    want_runs, got_runs = merged(want), merged(got)
    if got_runs is None:
        print("request_ranges: two of our requests overlap")
        return 1
    if want_runs != got_runs:
        print(f"request_ranges: the ranges differ\n  expected: {want_runs}\n  ours:     {got_runs}")
        return 1
    print(
        f"request_ranges: {len(got)} requests (upstream's list: {len(want)}) "
        f"cover the same ranges with the same kinds: {sorted(got_runs)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
