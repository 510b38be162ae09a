#!/usr/bin/env bash
# --ranges=FILE with --verify and with --checkpoint=FILE.
#  - --verify compares only the listed ranges (grown to the 64K blkhash
#    block: the copy's alignment with --verify), the rest hashed as zeroes
#    on both sides: onto a destination that differs from the source
#    everywhere, the copy passes, the destination is the source in the
#    grown blocks and its old bytes elsewhere, and --json's digests equal
#    the Python blkhash of the source with everything outside those blocks
#    zeroed.  A destination that drops the writes (nbdkit null) fails with
#    the message and both digests, each equal to its Python reference.
#  - --checkpoint: the copy, slowed by --rate, is killed (SIGKILL) after a
#    checkpoint (NBDCOPY_CHECKPOINT_SECONDS=0.3), in both engines.  A rerun
#    with another list and the same checkpoint file is refused before
#    anything is written (the message names the checkpoint, the settings
#    and the ranges; checkpoint and destination unchanged).  The rerun with
#    the same ranges (listed in another order, as JSON) resumes: -v says
#    "resuming with N bytes done" (N: the file's done bytes), --json has
#    bytes_already_done = N and bytes_copied = listed bytes - N, the file
#    ends with every byte done, and the destination equals both the
#    expected image and an uninterrupted --ranges copy.  The finished
#    command run again is accepted and copies nothing (as a finished full
#    copy's rerun is).
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)

size=$((16 * MiB))
make_random_file "$T/src.raw" "$size"
make_random_file "$T/old.raw" "$size"
printf '%s\n' "# offset length" "1M 1M" "4195304 2M" "9000000 1500000" "14M 2M" >"$T/list.txt"
listed="1048576+1048576,4195304+2097152,9000000+1500000,14680064+2097152"
listed_bytes=$((MiB + 2 * MiB + 1500000 + 2 * MiB))
# Grown to 64K blocks: [4M+1000, 6M+1000) -> [4M, 6M+64K),
# [9000000, 10500000) -> [8978432, 10551296).
grown="1048576+1048576,4194304+2162688,8978432+1572864,14680064+2097152"
grown_bytes=$((MiB + 2162688 + 1572864 + 2 * MiB))

# helper CMD ARGS [-- CMD ARGS]...: several jobs in one python start.
#   overlay SRC BASE OUT RANGES: OUT is BASE (a file, or "zero" for zeroes)
#     with SRC's bytes in RANGES;
#   blkhash FILE: prints the Python reference digest of FILE.
cat >"$T/helper.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])

def overlay(src, base, out, ranges):
    size = len(open(src, "rb").read()) if base == "zero" else None
    data = bytearray(size) if base == "zero" else bytearray(open(base, "rb").read())
    with open(src, "rb") as f:
        for item in ranges.split(","):
            off, n = map(int, item.split("+"))
            f.seek(off)
            data[off:off + n] = f.read(n)
    open(out, "wb").write(data)

cmds, cur = [], []
for a in sys.argv[2:] + ["--"]:
    if a == "--":
        cmds.append(cur)
        cur = []
    else:
        cur.append(a)
for c in cmds:
    if c[0] == "overlay":
        overlay(*c[1:5])
    elif c[0] == "blkhash":
        from blkhash_reference import blkhash
        print(blkhash(c[1]))
    else:
        sys.exit("unknown job " + c[0])
PY
helper() { "$PY" "$T/helper.py" "$TEST_LIB" "$@"; }

# mapdone MAP: DONE is the bytes a ddrescue mapfile marks done ("+"), or
# -1 when it is missing or not whole.  (Read by bash: the kill waits poll
# it every 50 ms.)
mapdone() {
    local lines=() rows=() line f i total=0
    DONE=-1
    [[ -r $1 ]] || return 0
    mapfile -t lines <"$1"
    for line in "${lines[@]}"; do
        [[ -z $line || $line == '#'* ]] || rows+=("$line")
    done
    ((${#rows[@]} >= 2)) || return 0
    read -ra f <<<"${rows[0]}"
    ((${#f[@]} >= 2)) || return 0
    for ((i = 1; i < ${#rows[@]}; i++)); do
        read -ra f <<<"${rows[i]}"
        ((${#f[@]} == 3)) && [[ ${f[1]} =~ ^(0[xX])?[0-9a-fA-F]+$ ]] || return 0
        [[ ${f[2]} != + ]] || total=$((total + 16#${f[1]#0[xX]}))
    done
    DONE=$total
}

# Every expected image and both digests in one python start: the images
# with the source's bytes in the grown blocks (on the old destination, and
# on zeroes) and in the listed ranges (on the old destination); the digest
# of the zeroed one, and of zeroes (what nbdkit null holds).
head -c "$size" /dev/zero >"$T/zero.raw"
mapfile -t digests < <(helper overlay "$T/src.raw" "$T/old.raw" "$T/expect64.raw" "$grown" \
    -- overlay "$T/src.raw" zero "$T/listed-only.raw" "$grown" \
    -- overlay "$T/src.raw" "$T/old.raw" "$T/expect.raw" "$listed" \
    -- blkhash "$T/listed-only.raw" -- blkhash "$T/zero.raw")
((${#digests[@]} == 2)) || fail "the python helper failed"
digest=${digests[0]} zero_digest=${digests[1]}

msg "--verify compares the listed blocks only"
cp "$T/old.raw" "$T/verify.raw"
run_copy --verify --json="$T/verify.json" --ranges="$T/list.txt" "$T/src.raw" "$T/verify.raw"
assert_same_file "$T/expect64.raw" "$T/verify.raw" "--verify --ranges (64K blocks)"
cmp -s "$T/src.raw" "$T/verify.raw" && fail "test bug: the unlisted ranges do not differ"
"$PY" - "$T/verify.json" "$digest" "$listed_bytes" "$grown_bytes" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
digest, lb, gb = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
assert r["verify"] == {"match": True, "destination_digest": digest,
                       "destination_checksum": None}, r["verify"]
assert r["blkhash"]["digest"] == digest, r["blkhash"]
assert r["ranges"]["listed_bytes"] == lb and r["ranges"]["dirty_bytes"] == gb, r["ranges"]
PY
    fail "--verify --json: $(<"$T/verify.json")"

start_nbdkit null null size="$size"
expect_fail "$NBDCOPY" --verify --ranges="$T/list.txt" "$T/src.raw" "$(uri_for null)"
want="nbdcopy: --verify: $(uri_for null): the destination does not match the source (blkhash $zero_digest differs from $digest)"
[[ $ERR == "$want" ]] || fail "expected '$want', got '$ERR'"
stop_server null

msg "--checkpoint: killed, refused with another list, resumed"
export NBDCOPY_CHECKPOINT_SECONDS=0.3
cp "$T/old.raw" "$T/whole.raw"
run_copy --ranges="$T/list.txt" "$T/src.raw" "$T/whole.raw"
assert_same_file "$T/expect.raw" "$T/whole.raw" "an uninterrupted --ranges copy"
# Another list: the last range shorter.
printf '%s\n' "1M 1M" "4195304 2M" "9000000 1500000" "14M 1M" >"$T/other.txt"
# The same ranges in another order and form.
cat >"$T/same.json" <<'EOF'
[{"offset": 14680064, "length": 2097152}, {"start": 9000000, "length": 1500000},
 {"offset": 1048576, "length": 1048576}, {"offset": 4195304, "length": 2097152}]
EOF

run_case() { # NAME ENGINE-OPTIONS...
    local name=$1; shift
    local map=$T/$name.map dst=$T/$name.raw pid i now=-1 rc=0
    cp "$T/old.raw" "$dst"
    msg "  $name: nbdcopy $* --checkpoint=$map --ranges=list.txt --rate=2M, killed"
    "$NBDCOPY" "$@" --checkpoint="$map" --ranges="$T/list.txt" --rate=2M --request-size=256K \
        "$T/src.raw" "$dst" 2>"$T/$name.kill.err" &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        _alive "$pid" || break
        mapdone "$map"
        now=$DONE
        ((now > 0)) && break
        nap 0.05
    done
    _alive "$pid" || fail "$name: the copy ended before its first checkpoint: $(head -c 300 "$T/$name.kill.err")"
    ((now > 0)) || { kill -9 "$pid"; fail "$name: no checkpoint within 30 s"; }
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || rc=$?
    [[ $rc -eq 137 ]] || fail "$name: exit status $rc, expected 137 (SIGKILL): $(head -c 300 "$T/$name.kill.err")"
    local done_bytes
    mapdone "$map"
    done_bytes=$DONE
    msg "  $name: killed with $done_bytes of $listed_bytes listed bytes done"
    ((done_bytes > 0 && done_bytes < listed_bytes)) || fail "$name: the checkpoint marks $done_bytes bytes done"
    cp "$map" "$T/$name.map.saved"
    cp "$dst" "$T/$name.saved"

    # Another list is another copy.
    expect_fail "$NBDCOPY" "$@" --checkpoint="$map" --ranges="$T/other.txt" "$T/src.raw" "$dst"
    local m
    m=$(re_quote "$map")
    assert_err_matches "^nbdcopy: --checkpoint=$m: it was made with other settings \('ranges=[^' ]+' then, 'ranges=[^' ]+' now\); remove $m to copy from the start\$"
    assert_unchanged "$dst" "$T/$name.saved" "$name: refused with another list"
    cmp -s "$map" "$T/$name.map.saved" || fail "$name: the refused run changed the checkpoint file"

    # The same ranges resume.
    run_copy "$@" -v --json="$T/$name.json" --checkpoint="$map" --ranges="$T/same.json" \
        "$T/src.raw" "$dst"
    grep -qxF "nbdcopy: checkpoint=$map: resuming with $done_bytes bytes done" "$T/cmd.err" ||
        fail "$name: -v does not say 'resuming with $done_bytes bytes done': $(grep -i resum "$T/cmd.err")"
    "$PY" - "$T/$name.json" "$done_bytes" "$listed_bytes" <<'PY' || fail "$name: --json: $(<"$T/$name.json")"
import json, sys
r = json.load(open(sys.argv[1]))
done, lb = int(sys.argv[2]), int(sys.argv[3])
assert r["bytes_already_done"] == done, r["bytes_already_done"]
assert r["bytes_copied"] == lb - done, r["bytes_copied"]
assert r["ranges"]["listed_bytes"] == lb and r["ranges"]["dirty_bytes"] == lb, r["ranges"]
PY
    mapdone "$map"
    [[ $DONE -eq $size ]] || fail "$name: the finished checkpoint marks $DONE of $size bytes done"
    assert_same_file "$T/expect.raw" "$dst" "$name: resumed"
    assert_same_file "$T/whole.raw" "$dst" "$name: resumed against uninterrupted"
}
run_case parallel
run_case synchronous --synchronous

# Running the finished command again is like rerunning a finished full
# copy: accepted, nothing left to copy, the destination as it was.  (The
# finished file marks the whole image done, the unlisted ranges too, where
# the destination rightly still holds its old bytes.)
msg "the finished copy run again: nothing to do"
cp "$T/parallel.raw" "$T/parallel.finished"
cp "$T/parallel.map" "$T/parallel.map.finished"
bounded_copy --json="$T/again.json" --checkpoint="$T/parallel.map" --ranges="$T/list.txt" \
    "$T/src.raw" "$T/parallel.raw"
[[ $RC -eq 0 ]] || fail "rerunning the finished --ranges --checkpoint copy exits $RC: $ERR"
"$PY" - "$T/again.json" <<'PY' || fail "the rerun copied again: $(<"$T/again.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bytes_copied"] == 0 and r["bytes_written"] == 0 and r["bytes_zeroed"] == 0, r
PY
assert_same_file "$T/parallel.finished" "$T/parallel.raw" "the finished copy run again"
msg PASS
