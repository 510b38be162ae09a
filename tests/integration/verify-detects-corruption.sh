#!/usr/bin/env bash
# --verify catches a destination that corrupts data silently.  The
# destination is an nbdkit sh plugin backed by a file that acknowledges
# every write but flips one byte ("flip OFFSET": the byte at OFFSET, xor
# 0xff, whenever a write covers it) or loses a whole write ("drop OFFSET":
# the write covering OFFSET is not stored); one server for every copy, the
# fault set between copies.  Without --verify the copy "succeeds" (exit 0)
# and the file really is corrupted exactly there; with --verify
# the same copy exits 1 with one line containing "does not match", and with
# -v the two digests are printed, differ, and equal the Python reference on
# the source and on the corrupted file; --checksum=sha1 --verify fails the
# same way, its line naming the two sha1sum digests.  Cases: a byte in data, a byte in a
# hole of the source (zeroes written), the last byte of a short final
# block, a lost write (one request, some 388K).
# --verify to null: or to - is refused before anything is read.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit python3 od
REF=$TEST_LIB/blkhash_reference.py

cat >"$T/baddisk.sh" <<'EOF'
#!/bin/sh
# nbdkit sh plugin: file=PATH faults=PATH.  The faults file, read at every
# write, says what to do to the write covering OFFSET: "flip OFFSET" or
# "drop OFFSET"; empty, no fault.  (POSIX sh: it runs once per request and
# per can_* query, and dash starts faster than bash; builtins only, but for
# the dd that moves the data.)
f=$tmpdir/file
case $1 in
    config)
        case $2 in
            file) ln -sf "$(realpath "$3")" "$f" ;;
            faults) ln -sf "$(realpath "$3")" "$tmpdir/faults" ;;
            *) echo "unknown parameter $2" >&2; exit 1 ;;
        esac ;;
    config_complete)
        [ -e "$f" ] && [ -e "$tmpdir/faults" ] ||
            { echo "file= and faults= are required" >&2; exit 1; } ;;
    thread_model) echo serialize_all_requests ;;
    get_size) exec stat -Lc %s "$f" ;;
    can_write|can_flush) exit 0 ;;
    can_trim|can_zero|can_fast_zero|can_extents|can_multi_conn) exit 3 ;;
    pread)
        exec dd if="$f" skip="$4" count="$3" bs=1M \
            iflag=count_bytes,skip_bytes status=none ;;
    pwrite)
        fault='' x=''
        read -r fault x <"$tmpdir/faults"
        # Not the write covering the fault's offset: stored as it is.
        if [ -z "$fault" ] || [ "$x" -lt "$4" ] || [ "$x" -ge $(($4 + $3)) ]; then
            exec dd of="$f" seek="$4" bs=1M oflag=seek_bytes conv=notrunc \
                status=none
        fi
        case $fault in
            drop)
                echo "dropped write count=$3 offset=$4" >&2
                exec cat >/dev/null ;;  # acknowledged, never stored
            flip)
                dd of="$f" seek="$4" bs=1M oflag=seek_bytes conv=notrunc \
                   status=none || exit 1
                b=$(od -An -tu1 -j "$x" -N1 "$f" | tr -d ' ')
                printf "\\$(printf %03o $((b ^ 255)))" |
                    dd of="$f" seek="$x" bs=1 oflag=seek_bytes conv=notrunc \
                       status=none || exit 1
                echo "flipped byte at $x in write count=$3 offset=$4" >&2 ;;
            *) echo "unknown fault $fault" >&2; exit 1 ;;
        esac ;;
    flush) sync "$f" ;;
    *) exit 2 ;;
esac
EOF
chmod +x "$T/baddisk.sh"

# 2 MiB and a bit: several requests, the faults in the second MiB, and
# the last 64K block short.
size=$((2 * MiB + 1536))
make_test_file "$T/src.img" "$size"

# Python reference digests of several files in one python3 start.
refs() { # ALGO BS FILE...
    python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from blkhash_reference import blkhash
for path in sys.argv[4:]:
    print(blkhash(path, sys.argv[2], int(sys.argv[3])))
' "$(dirname "$REF")" "$@" || fail "python reference failed"
}

# new_dst: a destination file full of junk (so a lost write shows).
new_dst() {
    make_random_file "$T/dst.img" "$size"
}

# assert_corrupted WHAT LO HI: $T/dst.img differs from $T/src.img, and
# only inside [LO, HI).
assert_corrupted() {
    local first last n
    cmp -s "$T/src.img" "$T/dst.img" &&
        fail "$1: the destination was not corrupted: this test proves nothing"
    # cmp -l prints 1-based offsets of every differing byte.
    read -r n first last < <(cmp -l "$T/src.img" "$T/dst.img" 2>/dev/null |
        awk 'NR == 1 { f = $1 } { l = $1 } END { print NR, f - 1, l - 1 }')
    ((first >= $2 && last < $3)) ||
        fail "$1: bytes differ in [$first, $last], expected only inside [$2, $3)"
    msg "$1: $n byte(s) corrupted in [$first, $last]"
}

# One server for every copy: the plugin keeps nothing between requests,
# the test rewrites the faults file and (new_dst) the destination file,
# both opened by name at each request, only between copies, while the
# server is idle (a copy has all its writes acknowledged, stored or
# dropped, before it exits).
: >"$T/faults"
new_dst
start_nbdkit bad sh "$T/baddisk.sh" file="$T/dst.img" faults="$T/faults"
uri=$(uri_for bad)

# scenario WHAT FAULT LO HI (FAULT: "flip OFFSET" or "drop OFFSET")
scenario() {
    local what=$1 lo=$3 hi=$4 rc
    echo "$2" >"$T/faults"

    msg "$what: without --verify the copy succeeds"
    new_dst
    run_copy "$T/src.img" "$uri"
    assert_corrupted "$what (no --verify)" "$lo" "$hi"

    msg "$what: --verify fails"
    new_dst
    expect_fail "$NBDCOPY" --verify "$T/src.img" "$uri"
    assert_err_contains "does not match"
    assert_corrupted "$what (--verify)" "$lo" "$hi"

    msg "$what: --verify exit status is 1, -v prints the two digests"
    new_dst
    rc=0
    "$NBDCOPY" -v --blkhash=md5/4K --verify "$T/src.img" "$uri" \
        >"$T/stdout.txt" 2>"$T/verbose.err" || rc=$?
    grep -v '^libnbd: debug' "$T/verbose.err" | grep -i 'verify\|match' |
        sed 's/^/    stderr: /' >&2 || true
    [[ $rc -eq 1 ]] || fail "$what: -v --verify exited $rc, expected 1"
    grep -q "does not match" "$T/verbose.err" ||
        fail "$what: -v --verify: no 'does not match' message"
    local s d
    s=$(sed -n 's/^nbdcopy: verify: source \([0-9a-f]*\)$/\1/p' "$T/verbose.err")
    d=$(sed -n 's/^nbdcopy: verify: destination \([0-9a-f]*\)$/\1/p' "$T/verbose.err")
    [[ ${#s} -eq 32 && ${#d} -eq 32 ]] ||
        fail "$what: -v: expected one md5 source and destination digest, got '$s' / '$d'"
    [[ $s != "$d" ]] || fail "$what: -v: the digests printed are equal: $s"
    local want
    mapfile -t want < <(refs md5 4096 "$T/src.img" "$T/dst.img")
    [[ $s == "${want[0]}" ]] ||
        fail "$what: -v source digest $s, reference on the source ${want[0]}"
    [[ $d == "${want[1]}" ]] ||
        fail "$what: -v destination digest $d, reference on the corrupted file ${want[1]}"

    msg "$what: --checksum --verify compares sha1sum digests (no blkhash)"
    new_dst
    expect_fail "$NBDCOPY" --checksum=sha1 --verify "$T/src.img" "$uri"
    assert_corrupted "$what (--checksum --verify)" "$lo" "$hi"
    local sums
    mapfile -t sums < <(sha1sum "$T/dst.img" "$T/src.img" | cut -d' ' -f1)
    assert_err_matches "^nbdcopy: --verify: .*: the destination does not match the source \(sha1 ${sums[0]} differs from ${sums[1]}\)\$"
    [[ ! -s $T/cmd.out ]] || fail "$what: a failed --verify printed its line: $(cat "$T/cmd.out")"
}

scenario "flipped byte in data" "flip 12345" 12345 12346
# [393293, 524288) is a hole in every MiB of the source: zeroes are written.
scenario "flipped byte in a hole" "flip $((MiB + 450000))" \
    $((MiB + 450000)) $((MiB + 450001))
scenario "flipped last byte (short final block)" "flip $((size - 1))" \
    $((size - 1)) "$size"
# A lost write leaves the junk that was there: somewhere within 1 MiB (the
# largest request) around the offset.
scenario "lost write" "drop $((MiB + 100000))" "$MiB" $((2 * MiB))

msg "the same destination script, no fault: --verify passes"
: >"$T/faults"
new_dst
run_copy --verify "$T/src.img" "$uri"
stop_server bad
assert_same_file "$T/src.img" "$T/dst.img" "fault-free sh destination"

# ---------------------------------------------------------------------------
msg "--verify to null: and to - is refused before reading anything"
start_nbdkit src --filter=log -r file "$T/src.img" logfile="$T/src-requests.txt"
expect_fail "$NBDCOPY" --verify "$(uri_for src)" null:
assert_err_contains "--verify: null: cannot be read back"
expect_fail "$NBDCOPY" --blkhash --verify "$(uri_for src)" null:
assert_err_contains "--verify: null: cannot be read back"
expect_fail "$NBDCOPY" --verify "$(uri_for src)" -
assert_err_contains "--verify: - cannot be read back"
[[ ! -s $T/cmd.out ]] || fail "--verify to -: data was written to stdout"
expect_fail "$NBDCOPY" --blkhash --blkhash-file="$T/h.txt" --verify "$(uri_for src)" -
assert_err_contains "--verify: - cannot be read back"
[[ ! -s $T/cmd.out ]] || fail "--verify to - with --blkhash-file: data was written to stdout"
[[ ! -s $T/h.txt ]] || fail "--verify to -: a digest was written"
stop_server src
n=$(log_count "$T/src-requests.txt" Read)
[[ $n -eq 0 ]] || fail "$n Read requests reached the source before the refusal"
msg PASS
