#!/usr/bin/env bash
# --ranges=FILE with a plain text list ("OFFSET LENGTH" a line) in every
# spelling: unsorted, overlapping, adjacent and unaligned ranges, a
# zero length, "#" comments (whole lines and after a range), blank lines,
# a CRLF line ending, tabs, a comma, K/M suffixes and 0x hex.  The copy
# goes from a raw file (random data and a punched hole, which lies in a
# listed range) onto an NBD destination holding other random bytes
# that takes only whole 64K blocks (nbdkit blocksize-policy, error policy,
# behind the log filter).  Listed ranges grow to whole 64K blocks: inside
# those blocks the destination ends equal to the source, everywhere else
# it keeps its old bytes (the expected image is built with dd, compared
# with cmp); every Write and Zero request is 64K-aligned and lies inside
# the grown blocks, together they cover them, and the hole arrives as a
# Zero request; no Trim.  Both engines (default, two connections, and
# --synchronous), the list from a file and from stdin.  The dry run
# (null:) prints the exact listed bytes from a file source (alignment 1)
# and the grown ones from a 64K source; the same list written as JSON
# ("start" for "offset", other keys ignored) gives the same line.  --json
# has the "ranges" object (listed and grown figures).
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)

K=65536
size=$((8 * MiB))
make_random_file "$T/src.raw" "$size"
hole=$((2 * MiB))  # [2M, 2M + 256K): a hole in the source, data in the destination
if ! fallocate -p -o "$hole" -l 262144 "$T/src.raw" 2>/dev/null; then
    write_zeroes "$T/src.raw" "$hole" 262144
fi
cmp -s -i "$hole:0" -n 262144 "$T/src.raw" /dev/zero || fail "could not make the hole"
make_random_file "$T/old.raw" "$size"

# The list: unsorted, with every spelling.  Merged, it names
#   [1M, 1M+100000)          (the 4096 at 1M lies inside it)
#   [2M, 2M+320K)            ("2M 256K" and the adjacent 0x240000 64K)
#   [3000000, 3000010)       (10 bytes inside the block at 2949120)
#   [3014656, 3014657)       (1 byte, the first of the next block)
#   [5M, 5M+4K)
#   [7M+12345, 8M)           (to the end of the image)
# and the zero length at 6M adds nothing.
printf '%s\n' \
    "# ranges changed since the last backup" \
    "" \
    "0x500000 0x1000          # hex" \
    "1M 100000                # unaligned length" \
    "1048576, 4096            # a comma; overlaps the line above" \
    "   2M	256K" \
    "3000000 10" \
    "0x240000 64K             # adjacent to 2M 256K" \
    "3014656 1" \
    "6M 0                     # a zero length" \
    "  # an indented comment" \
    "7352377 1036231" >"$T/list.txt"
printf '0x500000 4K\r\n' >>"$T/list.txt"  # a CRLF line, the same range again
listed_bytes=$((100000 + 327680 + 10 + 1 + 4096 + 1036231))
listed_ranges=6
# Grown to whole 64K blocks (the blocks at 2949120 and 3014656 touch):
grown="$MiB+131072,$((2 * MiB))+327680,2949120+131072,$((5 * MiB))+65536,$((7 * MiB))+$MiB"
grown_bytes=$((131072 + 327680 + 131072 + 65536 + MiB))
grown_ranges=5

# The expected destination: the old bytes, the source's in the grown blocks.
cp "$T/old.raw" "$T/expect.raw"
IFS=, read -ra blocks <<<"$grown"
for b in "${blocks[@]}"; do
    off=${b%+*} len=${b#*+}
    ((off % K == 0 && len % K == 0)) || fail "test bug: $b is not in whole 64K blocks"
    dd if="$T/src.raw" of="$T/expect.raw" bs=64K skip=$((off / K)) seek=$((off / K)) \
        count=$((len / K)) conv=notrunc status=none
done
cmp -s "$T/expect.raw" "$T/old.raw" && fail "test bug: nothing to copy"

# regions_of FILE WHAT: FILE is the source in the grown blocks and the old
# destination elsewhere (reported region by region).
regions_of() {
    local result=$1 what=$2 pos=0 b off len
    for b in "${blocks[@]}" "$size+0"; do
        off=${b%+*} len=${b#*+}
        if ((off > pos)); then
            cmp -s -i "$pos:$pos" -n $((off - pos)) "$T/old.raw" "$result" ||
                fail "$what: [$pos, $off), outside the listed blocks, is no longer the old destination"
        fi
        if ((len > 0)); then
            cmp -s -i "$off:$off" -n "$len" "$T/src.raw" "$result" ||
                fail "$what: [$off, $((off + len))), a listed block, differs from the source"
        fi
        pos=$((off + len))
    done
}
regions_of "$T/expect.raw" "test bug: the expected image"

# assert_regions RESULT WHAT: RESULT is the expected image, so each of its
# regions is what regions_of found there (one cmp, not one per region;
# when it differs, the first region that does is named).
assert_regions() {
    cmp -s "$T/expect.raw" "$1" && return 0
    regions_of "$1" "$2"
    assert_same_file "$T/expect.raw" "$1" "$2"
}

msg "dry runs"
dry() { # WANT-LINE WHAT NBDCOPY-ARGS...
    local want=$1 what=$2; shift 2
    "$NBDCOPY" "$@" >"$T/dry.out" 2>"$T/dry.err" || fail "$what: dry run failed: $(<"$T/dry.err")"
    [[ $(<"$T/dry.out") == "$want" ]] ||
        fail "$what: the dry run printed '$(<"$T/dry.out")', expected '$want'"
    [[ ! -s $T/dry.err ]] || fail "$what: the dry run wrote to stderr: $(<"$T/dry.err")"
}
exact="dirty=$listed_bytes ranges=$listed_ranges clean=$((size - listed_bytes)) size=$size"
whole="dirty=$grown_bytes ranges=$grown_ranges clean=$((size - grown_bytes)) size=$size"
dry "$exact" "file source" --ranges="$T/list.txt" "$T/src.raw" null:
dry "$exact" "file source, stdin" --ranges=- "$T/src.raw" null: <"$T/list.txt"
start_nbdkit src64 -r --filter=blocksize-policy file "$T/src.raw" \
    blocksize-minimum=64K blocksize-preferred=64K blocksize-error-policy=error
dry "$whole" "64K source" --ranges="$T/list.txt" "$(uri_for src64)" null:
stop_server src64
cat >"$T/list.json" <<'EOF'
[ {"start": 3014656, "length": 1, "note": "the same list as JSON"},
  {"offset": 5242880, "length": 4096},
  {"offset": 7352377, "length": 1036231, "type_of_change": "write"},
  {"offset": 1048576, "length": 100000}, {"offset": 1048576, "length": 4096},
  {"start": 2097152, "length": 262144}, {"offset": 2359296, "length": 65536},
  {"offset": 3000000, "length": 10}, {"offset": 6291456, "length": 0} ]
EOF
dry "$exact" "the list as JSON" --ranges="$T/list.json" "$T/src.raw" null:

run_case() { # NAME LIST-SOURCE OPTIONS...: LIST-SOURCE "file" or "stdin"
    local name=$1 from=$2; shift 2
    local log=$T/$name.req list=("--ranges=$T/list.txt")
    [[ $from == stdin ]] && list=(--ranges=-)
    cp "$T/old.raw" "$T/$name.raw"
    start_nbdkit dst --filter=log --filter=blocksize-policy file "$T/$name.raw" \
        blocksize-minimum=64K blocksize-preferred=64K blocksize-maximum=1M \
        blocksize-error-policy=error logfile="$log"
    run_copy "$@" --json="$T/$name.json" "${list[@]}" "$T/src.raw" "$(uri_for dst)" <"$T/list.txt"
    stop_server dst
    # One logtool start for every figure (count is log_count's).
    local figures misaligned outside unspanned unzeroed writes zeroes trims
    mapfile -t figures < <(logtool misaligned "$log" Write,Zero,Trim "$K" 1048576 "$size" \
        -- outranges "$log" Write,Zero,Trim "$grown" -- unspanned "$log" Write,Zero "$grown" \
        -- unspanned "$log" Zero "$hole+262144" \
        -- count "$log" Write -- count "$log" Zero -- count "$log" Trim)
    ((${#figures[@]} == 7)) || fail "$name: logtool failed on $log"
    read -r misaligned outside unspanned unzeroed writes zeroes trims <<<"${figures[*]}"
    msg "  $name: $writes writes, $zeroes zeroes"
    ((writes > 0)) || fail "$name: no Write request in the log"
    [[ $misaligned -eq 0 ]] || fail "$name: $misaligned requests break the 64K block rules"
    [[ $outside -eq 0 ]] || fail "$name: $outside bytes written or zeroed outside the listed blocks"
    [[ $unspanned -eq 0 ]] || fail "$name: $unspanned bytes of the listed blocks neither written nor zeroed"
    [[ $unzeroed -eq 0 ]] || fail "$name: the source's hole was not zeroed with Zero requests"
    [[ $trims -eq 0 ]] || fail "$name: Trim requests"
    assert_regions "$T/$name.raw" "$name"
    "$PY" - "$T/$name.json" "${list[0]#--ranges=}" "$listed_bytes" "$listed_ranges" \
        "$grown_bytes" "$grown_ranges" "$size" <<'PY' || fail "$name: --json: $(<"$T/$name.json")"
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[2]
lb, lr, gb, gr, size = map(int, sys.argv[3:])
want = {"file": name, "listed_bytes": lb, "listed_ranges": lr,
        "dirty_bytes": gb, "ranges": gr, "clean_bytes": size - gb}
assert r["ranges"] == want, r["ranges"]
assert r["bytes_copied"] == gb, r["bytes_copied"]
assert r["bytes_written"] + r["bytes_zeroed"] == gb, (r["bytes_written"], r["bytes_zeroed"])
assert r["exit_status"] == 0, r["error"]
PY
}

run_case parallel file -C 2
run_case synchronous stdin --synchronous
msg PASS
