#!/usr/bin/env python3
"""Reads a copier's stderr as Forklift's monitor does and prints, one per
line, the percentages it would extract.

usage: forklift_progress.py [--frames [--lines-to OUT]] FILE

Forklift splits the output into lines with Go's bufio.ScanLines (split on
"\\n", one "\\r" before it dropped, lines cut at 64 KiB) and matches each
against the Go expression  .+ (\\d+)% \\[[*-]+\\]  (leftmost match, greedy,
"." any character but "\\n", "\\d" ASCII digits, bytes read as UTF-8 with
invalid bytes replaced).

--frames: split each line further at "\\r" (the frames a terminal redraws)
and check each frame on its own. Either way, a unit that does not match
and is not one of our "nbdcopy: " messages is printed on stderr as
"unmatched: ..." and makes the exit status 1.

--lines-to OUT (with --frames): also write to OUT the percentages of the
plain line-by-line reading (what a run without --frames prints; its
unmatched lines neither printed nor counted), so that a terminal's capture
is read both ways in one python3 start.
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


def percents(data, frames, out, unmatched):
    """Writes to out the percents of data's units; unmatched(text) for each
    unit that is neither a frame nor a "nbdcopy: " message."""
    for line in scan_lines(data):
        units = line.split(b"\r") if frames else [line]
        for unit in units:
            text = unit.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            match = FORKLIFT.search(text)
            if match:
                print(int(match.group(1)), file=out)
            elif not text.startswith("nbdcopy: "):
                unmatched(text)


def main():
    args = sys.argv[1:]
    frames = args[0] == "--frames"
    if frames:
        args = args[1:]
    lines_to = None
    if frames and args[0] == "--lines-to":
        lines_to, args = args[1], args[2:]
    data = open(args[0], "rb").read()
    bad = []

    def unmatched(text):
        print("unmatched: %r" % text[:200], file=sys.stderr)
        bad.append(text)

    percents(data, frames, sys.stdout, unmatched)
    if lines_to is not None:
        with open(lines_to, "w") as out:
            percents(data, False, out, lambda text: None)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
