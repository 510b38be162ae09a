#!/usr/bin/env bash
# -p / --progress off a terminal: every line on stderr is one frame in
# libnbd's format followed by ours ("▐  27% [***********-----...] 17.5 MiB
# of 64.0 MiB, 22.2 MiB/s, ETA 0:03"): a spinner character, the percent in
# three columns, a bar of 40 cells whose stars match the percent, then the
# bytes of the total, the rate and the time left; the last frame is the
# only 100 % one, "█ 100% [****...]" with the time taken. Percents never go
# down. Nothing extra reaches stdout, and the copies are correct (file ->
# nbd, and nbd -> stdout, where the bar must not pollute the data). The
# copies are slowed by --rate so that frames between the first and the
# last appear.
source "$(dirname "$0")/lib/lib.sh"

size=$((24 * MiB + 1234))
make_test_file "$T/src.img" "$size"
start_nbdkit dst memory size="$size"

# check_frames FILE WHAT: the frames in FILE are well formed (above).
check_frames() {
    rm -f "$T/frames.why"
    /usr/bin/python3 - "$1" "$2" "$T/frames.why" <<'EOF' || fail "$2: $(cat "$T/frames.why")"
import math, re, sys
path, what, why = sys.argv[1], sys.argv[2], sys.argv[3]
spinner = "▝▐▗▃▖▍▘▀"
frame = re.compile(r"^(.) ([ \d]{2}\d)% \[([*-]{40})\] (.*)$")
size_text = r"[\d.]+ (B|KiB|MiB|GiB)"
middle = re.compile(rf"^{size_text} of 24\.0 MiB, ([\d.]+ (B|KiB|MiB|GiB)/s, ETA \d+:\d\d|--/s)$")
final = re.compile(r"^24\.0 MiB of 24\.0 MiB, [\d.]+ (B|KiB|MiB|GiB)/s, in \d+:\d\d$")
lines = open(path, encoding="utf-8").read().split("\n")
problems = []
if lines and lines[-1] == "":
    lines.pop()
else:
    problems.append("the last frame does not end with a newline")
last = -1
for n, line in enumerate(lines, 1):
    m = frame.match(line)
    if not m:
        problems.append(f"line {n} is not a frame: {line!r}")
        continue
    spin, pct, bar, extra = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    stars = bar.count("*")
    if bar != "*" * stars + "-" * (40 - stars):
        problems.append(f"line {n}: the stars are not on the left: {bar}")
    # libnbd fills ceil(40 * done / total) cells; the percent is rounded down.
    if not (math.floor(40 * pct / 100) <= stars <= math.ceil(40 * (pct + 1) / 100)):
        problems.append(f"line {n}: {stars} stars for {pct}%")
    if pct < last:
        problems.append(f"line {n}: the percent went down from {last} to {pct}")
    last = pct
    is_last = n == len(lines)
    if is_last:
        if spin != "█" or pct != 100 or stars != 40 or not final.match(extra):
            problems.append(f"the last frame is not the final one: {line!r}")
    else:
        if spin not in spinner:
            problems.append(f"line {n}: spinner {spin!r} is not one of {spinner}")
        if pct == 100:
            problems.append(f"line {n}: a 100% frame before the last")
        if not middle.match(extra):
            problems.append(f"line {n}: our part is not 'X of 24.0 MiB, RATE/s, ETA M:SS': {extra!r}")
if len(lines) < 3:
    problems.append(f"{len(lines)} frames: no frame between the first and the last")
if problems:
    open(why, "w").write("; ".join(problems[:5]))
    sys.exit(1)
print(f"{what}: {len(lines)} frames, well formed")
EOF
}

for opt in -p --progress; do
    msg "$opt file -> nbd"
    "$NBDCOPY" "$opt" --rate=8M "$T/src.img" "$(uri_for dst)" 2>"$T/err.txt" ||
        fail "$opt copy failed: $(head -c 300 "$T/err.txt")"
    check_frames "$T/err.txt" "$opt file -> nbd"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "$opt copy"

    msg "$opt nbd -> stdout"
    "$NBDCOPY" "$opt" --rate=8M "$(uri_for dst)" - 2>"$T/err2.txt" >"$T/out.img" ||
        fail "$opt copy to stdout failed: $(head -c 300 "$T/err2.txt")"
    check_frames "$T/err2.txt" "$opt nbd -> stdout"
    assert_same_file "$T/src.img" "$T/out.img" "$opt copy to stdout"
done
msg PASS
