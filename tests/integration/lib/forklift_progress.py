#!/usr/bin/env python3
"""Reads a copier's stderr as Forklift's monitor does and prints, one per
line, the percentages it would extract.

usage: forklift_progress.py [--frames] FILE

Forklift splits the output into lines with Go's bufio.ScanLines (split on
"\\n", one "\\r" before it dropped, lines cut at 64 KiB) and matches each
against the Go expression  .+ (\\d+)% \\[[*-]+\\]  (leftmost match, greedy,
"." any character but "\\n", "\\d" ASCII digits, bytes read as UTF-8 with
invalid bytes replaced).

--frames: split each line further at "\\r" (the frames a terminal redraws)
and check each frame on its own. Either way, a unit that does not match
and is not one of our "nbdcopy: " messages is printed on stderr as
"unmatched: ..." and makes the exit status 1.
"""
import re
import sys

FORKLIFT = re.compile(r".+ (\d+)% \[[*-]+\]", re.ASCII)
MAX_TOKEN = 64 * 1024


def scan_lines(data):
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        for start in range(0, max(len(line), 1), MAX_TOKEN):
            yield line[start:start + MAX_TOKEN]


def main():
    args = sys.argv[1:]
    frames = args[0] == "--frames"
    if frames:
        args = args[1:]
    data = open(args[0], "rb").read()
    status = 0
    for line in scan_lines(data):
        units = line.split(b"\r") if frames else [line]
        for unit in units:
            text = unit.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            match = FORKLIFT.search(text)
            if match:
                print(int(match.group(1)))
            elif not text.startswith("nbdcopy: "):
                print("unmatched: %r" % text[:200], file=sys.stderr)
                status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
