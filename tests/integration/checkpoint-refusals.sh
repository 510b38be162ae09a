#!/usr/bin/env bash
# --checkpoint=FILE refuses, before anything is written, a checkpoint that
# does not belong to the copy, and the copies it cannot resume: exit 1,
# one line "nbdcopy: --checkpoint=FILE: ..." in the exact words (what
# differs, both values, "remove FILE to copy from the start"), the
# destination byte-identical to before, FILE unchanged, no FILE.tmp.
# The cases: another source size (bigger, smaller), other content in a
# sampled block (the fingerprints in the message are the ones we compute:
# sha256 blkhash of 16 spread 64 KiB blocks), other -S / --allocated /
# --destination-is-zero, another source or destination operand (same
# bytes), a stream or null: destination, a FIFO or character device
# destination, a stream source (stdin, a FIFO, a character device), a FILE that cannot be written, a destination deleted since, a corrupt FILE (a garbage line, a
# partial last line, the last line missing, a bad status, no identity, an
# empty file; a directory or a FIFO as FILE), and a destination that does
# not hold what FILE says was copied (overwritten with zeroes; an nbdkit
# memory server restarted).
#
# (Cheap on processes, for a small machine: the checkpoint tool's answers
# come from one python start; the corrupt FILEs are written by the shell
# from the good one's text; the refused runs are watched by the shell, not
# by timeout(1).)
source "$(dirname "$0")/lib/lib.sh"
source "$TEST_LIB/checkpoint_lib.bash"
require_cmd nbdkit qemu-img setsid pgrep

size=$((8 * MiB))
make_test_file "$T/src.img" "$size"  # random bytes at offset 0
cp "$T/src.img" "$T/src.orig"
src=$T/src.img
dst=$T/dst.img
map=$T/copy.map

# A partly done copy: --synchronous, killed after a checkpoint, so that FILE
# marks [0, N) done.
export NBDCOPY_CHECKPOINT_SECONDS=0.2
kill_after_checkpoint "$map" 0 copier --synchronous --rate=4M --request-size=256K \
    --checkpoint="$map" "$src" "$dst"
[[ $KILL_RC -eq 137 ]] || fail "the copy finished before it was killed"
# The sources with other content in a sampled block (below): in the first
# 64 KiB block, then in the last; their fingerprints are computed with ours.
changed_at=(1000 $((size - 100)))
for i in 0 1; do
    cp "$T/src.orig" "$T/src.changed$i"
    printf 'changed-content!' |
        dd of="$T/src.changed$i" bs=1 seek="${changed_at[i]}" conv=notrunc status=none
done
assert_map "$map" "the partly done FILE" ";" "done" "$map" ";" identity "$map" fingerprint \
    ";" fingerprint "$src" ";" fingerprint "$T/src.changed0" ";" fingerprint "$T/src.changed1"
map_done_ranges=${MAP_MORE[0]} map_fp=${MAP_MORE[1]} fp=${MAP_MORE[2]}
changed_fp=("${MAP_MORE[@]:3:2}")
((MAP_DONE > 0 && MAP_DONE < size && MAP_RUNS == 1)) ||
    fail "the partly done FILE marks $MAP_DONE bytes in $MAP_RUNS runs"
[[ $map_done_ranges == 0+* ]] || fail "the done range does not start at 0: $map_done_ranges"
cp "$dst" "$T/dst.saved"
cp "$map" "$T/map.saved"
[[ $map_fp == "$fp" ]] || fail "FILE's fingerprint $map_fp is not ours: $fp"

remove="; remove $map to copy from the start"

# bounded CMD...: runs CMD (its redirections the caller's) for 30 s at most;
# RC is its exit status, or "hung" when it was still running then (and is
# killed).  The shell watches it: no timeout(1) process per run.  (<&0: a
# command run with & would otherwise read /dev/null, not the caller's
# standard input.)
bounded() {
    local pid i
    "$@" <&0 &
    pid=$!
    for ((i = 0; i < 3000; i++)); do
        _alive "$pid" || break
        nap 0.01
    done
    RC=0
    if _alive "$pid"; then
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        RC=hung
        return 0
    fi
    wait "$pid" || RC=$?
}

# refuse EXPECTED-STDERR ARGS...: nbdcopy ARGS fails (within 30 s) with
# exactly EXPECTED-STDERR, touching neither the destination nor FILE.
refuse() {
    local want=$1 rc err_lines
    shift
    msg "refuse: nbdcopy $*"
    bounded "$NBDCOPY" "$@" >"$T/cmd.out" 2>"$T/cmd.err" </dev/null
    rc=$RC
    ERR=$(<"$T/cmd.err") # (bash reads it itself: no fork)
    mapfile -t err_lines <"$T/cmd.err"
    ((${#err_lines[@]} == 0)) || printf '    stderr: %s\n' "${err_lines[@]}" >&2
    [[ $rc != hung && $rc -ne 124 && $rc -ne 137 ]] || fail "hung: nbdcopy $*"
    [[ $rc -eq 1 ]] || fail "exit status $rc, expected 1: nbdcopy $*"
    [[ ! -s $T/cmd.out ]] || fail "something on stdout: nbdcopy $*"
    assert_unchanged "$dst" "$T/dst.saved" "$*"
    cmp -s "$map" "$T/map.saved" || fail "FILE changed: nbdcopy $*"
    [[ ! -e $map.tmp ]] || fail "$map.tmp created: nbdcopy $*"
    [[ $ERR == "$want" ]] || fail "the message is not '$want': $ERR"
}

# --- Another source size, with the same operand.
truncate -s $((size + MiB)) "$src"
refuse "nbdcopy: --checkpoint=$map: the source's size differs (the checkpoint was made for $size bytes, the source has $((size + MiB)))$remove" \
    --checkpoint="$map" "$src" "$dst"
truncate -s $((size - 4096)) "$src"
refuse "nbdcopy: --checkpoint=$map: the source's size differs (the checkpoint was made for $size bytes, the source has $((size - 4096)))$remove" \
    --checkpoint="$map" "$src" "$dst"
cp "$T/src.orig" "$src"

# --- Other content in the first 64 KiB block, then in the last (made and
# fingerprinted above).
for i in 0 1; do
    cp "$T/src.changed$i" "$src"
    now=${changed_fp[i]}
    [[ $now != "$fp" ]] || fail "our fingerprint does not see the change at ${changed_at[i]}"
    refuse "nbdcopy: --checkpoint=$map: the source's content differs from when the checkpoint was made (fingerprint '$fp' then, '$now' now)$remove" \
        --checkpoint="$map" "$src" "$dst"
    cp "$T/src.orig" "$src"
done

# --- Other settings.
refuse "nbdcopy: --checkpoint=$map: it was made with other settings ('sparse=4096' then, 'sparse=0' now)$remove" \
    -S 0 --checkpoint="$map" "$src" "$dst"
refuse "nbdcopy: --checkpoint=$map: it was made with other settings ('allocated=no' then, 'allocated=yes' now)$remove" \
    --allocated --checkpoint="$map" "$src" "$dst"
refuse "nbdcopy: --checkpoint=$map: it was made with other settings ('destination-is-zero=no' then, 'destination-is-zero=yes' now)$remove" \
    --destination-is-zero --checkpoint="$map" "$src" "$dst"

# --- Another source or destination operand, holding the same bytes.
cp "$src" "$T/src-copy.img"
refuse "nbdcopy: --checkpoint=$map: it was made for source '$src', not '$T/src-copy.img'$remove" \
    --checkpoint="$map" "$T/src-copy.img" "$dst"
start_nbdkit same -r file "$src"
same_uri=$(uri_for same)
refuse "nbdcopy: --checkpoint=$map: it was made for source '$src', not '$same_uri'$remove" \
    --checkpoint="$map" "$same_uri" "$dst"
stop_server same
cp "$dst" "$T/dst-copy.img"
refuse "nbdcopy: --checkpoint=$map: it was made for destination '$dst', not '$T/dst-copy.img'$remove" \
    --checkpoint="$map" "$src" "$T/dst-copy.img"
assert_unchanged "$T/dst-copy.img" "$T/dst.saved" "another destination operand"

# --- Destinations and sources that cannot be resumed (FILE there or not).
for m in "$map" "$T/none.map"; do
    refuse "nbdcopy: --checkpoint=$m: -: a resumable copy needs a destination written at offsets, not a stream" \
        --checkpoint="$m" "$src" -
    refuse "nbdcopy: --checkpoint=$m: null:: a resumable copy needs a destination written at offsets, not null:" \
        --checkpoint="$m" "$src" null:
    msg "refuse: a stream source"
    bounded "$NBDCOPY" --checkpoint="$m" - "$dst" <"$src" 2>"$T/cmd.err"
    rc=$RC
    ERR=$(<"$T/cmd.err")
    [[ $rc == 1 ]] || fail "a stream source: exit status $rc"
    [[ $ERR == "nbdcopy: --checkpoint=$m: -: a stream source cannot be resumed" ]] ||
        fail "a stream source: $ERR"
    assert_unchanged "$dst" "$T/dst.saved" "a stream source"
    mkfifo "$T/fifo"
    refuse "nbdcopy: --checkpoint=$m: $T/fifo: a resumable copy needs a destination written at offsets, not a stream" \
        --checkpoint="$m" "$src" "$T/fifo"
    # The rule every feature writing at offsets shares (job/option_checks.h):
    # a character device is a stream; a FIFO source is refused before it is
    # opened (opening it would wait for a writer).
    refuse "nbdcopy: --checkpoint=$m: /dev/null: a resumable copy needs a destination written at offsets, not a stream" \
        --checkpoint="$m" "$src" /dev/null
    refuse "nbdcopy: --checkpoint=$m: $T/fifo: a stream source cannot be resumed" \
        --checkpoint="$m" "$T/fifo" "$dst"
    refuse "nbdcopy: --checkpoint=$m: /dev/zero: a stream source cannot be resumed" \
        --checkpoint="$m" /dev/zero "$dst"
    rm -f "$T/fifo"
done
[[ ! -e $T/none.map ]] || fail "a refused copy created FILE"

# --- A FILE that cannot be written: refused before the destination is
# touched (an existing one is left as it is, a new one not created).
nodir=$T/no-such-dir/copy.map
refuse "nbdcopy: --checkpoint=$nodir: cannot write $nodir.tmp: No such file or directory" \
    --checkpoint="$nodir" "$src" "$dst"
refuse "nbdcopy: --checkpoint=$nodir: cannot write $nodir.tmp: No such file or directory" \
    --checkpoint="$nodir" "$src" "$T/new.img"
[[ ! -e $T/new.img ]] || fail "an unwritable FILE: the destination was created"

# --- The destination of the copy to resume was deleted.
mv "$dst" "$T/dst.moved"
msg "refuse: a deleted destination"
rc=0
"$NBDCOPY" --checkpoint="$map" "$src" "$dst" 2>"$T/cmd.err" || rc=$?
ERR=$(<"$T/cmd.err")
[[ $rc -eq 1 ]] || fail "a deleted destination: exit status $rc"
[[ ! -e $dst ]] || fail "a deleted destination was created again"
cmp -s "$map" "$T/map.saved" || fail "a deleted destination: FILE changed"
[[ $ERR == "nbdcopy: --checkpoint=$map: $dst: the destination of the copy to resume is missing (No such file or directory)$remove" ]] ||
    fail "a deleted destination: $ERR"
mv "$T/dst.moved" "$dst"

# --- A corrupt FILE: the message names FILE and the line.  The corrupt
# versions are made by the shell from the good file's text (FILE is still
# the one assert_map checked: every refusal above compared it with
# map.saved, so MAP_DONE is what it marks done).
# (ASCII only, as nbdcopy writes it: a length in characters is one in bytes.)
IFS= read -rd '' good_text <"$map" || true
[[ $good_text == *$'\n' ]] || fail "FILE does not end with a newline"
mapfile -t good_lines <"$map"
lines=${#good_lines[@]}
done_bytes=$MAP_DONE
corrupt() { # TEXT EXPECTED-STDERR: FILE holds TEXT; refused and left as it is
    printf '%s' "$1" >"$map"
    printf '%s' "$1" >"$T/map.saved"
    refuse "$2" --checkpoint="$map" "$src" "$dst"
    printf '%s' "$good_text" >"$map"
    printf '%s' "$good_text" >"$T/map.saved"
}
corrupt "${good_text}garbage"$'\n' \
    "nbdcopy: --checkpoint=$map: $map: line $((lines + 1)): a block line needs 3 words (pos size status), not 1"
corrupt "${good_text:0:${#good_text}-10}" \
    "nbdcopy: --checkpoint=$map: $map: line $lines: a block line needs 3 words (pos size status), not 2"
printf -v end '0x%08X' "$done_bytes"
printf -v size_hex '0x%08X' "$size"
printf -v text '%s\n' "${good_lines[@]:0:lines-1}" # the last line missing
corrupt "$text" \
    "nbdcopy: --checkpoint=$map: $map: line $((lines - 1)): the blocks end at $end, before nbdcopy-size $size ($size_hex)"
last=${good_lines[lines - 1]}
[[ $last == *\? ]] || fail "FILE's last line does not end with '?': $last"
corrupt "$text${last%\?}X"$'\n' \
    "nbdcopy: --checkpoint=$map: $map: line $lines: 'X' is not a block status (one of ?*/-+)"
text=
for line in "${good_lines[@]}"; do
    [[ $line == "# nbdcopy-fingerprint:"* ]] || text+=$line$'\n'
done
[[ $text != "$good_text" ]] || fail "FILE has no nbdcopy-fingerprint line to take out"
corrupt "$text" \
    "nbdcopy: --checkpoint=$map: $map: not a checkpoint written by nbdcopy (it has no nbdcopy-fingerprint line)"
corrupt "" "nbdcopy: --checkpoint=$map: $map: not a checkpoint written by nbdcopy"
mkdir "$T/dir.map"
refuse "nbdcopy: --checkpoint=$T/dir.map: cannot read it: Is a directory" --checkpoint="$T/dir.map" "$src" "$dst"
mkfifo "$T/fifo.map"
refuse "nbdcopy: --checkpoint=$T/fifo.map: not a regular file" --checkpoint="$T/fifo.map" "$src" "$dst"

# --- A destination that does not hold what FILE says was copied.
# (Last: the words of this message are checked after the rest.)
cp "$dst" "$T/dst.before-zeroes"
write_zeroes "$dst" 0 "$size"
cp "$dst" "$T/dst.saved"
refuse "nbdcopy: --checkpoint=$map: $dst does not hold what the checkpoint says was copied (the bytes at offset 0 differ from the source's)$remove" \
    --checkpoint="$map" "$src" "$dst"

# An nbdkit memory destination restarted between the runs: empty again.
mem_map=$T/memory.map
mem_uri=$(uri_for mem)
start_nbdkit mem memory size="$size"
run_copy --checkpoint="$mem_map" "$src" "$mem_uri"
stop_server mem
start_nbdkit mem memory size="$size"
cp "$mem_map" "$T/memory.saved"
msg "refuse: a restarted memory destination"
rc=0
"$NBDCOPY" --checkpoint="$mem_map" "$src" "$mem_uri" 2>"$T/cmd.err" || rc=$?
ERR=$(<"$T/cmd.err")
[[ $rc -eq 1 ]] || fail "a restarted memory destination: exit status $rc"
cmp -s "$mem_map" "$T/memory.saved" || fail "a restarted memory destination: FILE changed"
head -c "$size" /dev/zero >"$T/zeroes.img"
assert_nbd_equals_file "$mem_uri" "$T/zeroes.img" "a restarted memory destination (written to)"
[[ $ERR == "nbdcopy: --checkpoint=$mem_map: $mem_uri does not hold what the checkpoint says was copied (the bytes at offset 0 differ from the source's); remove $mem_map to copy from the start" ]] ||
    fail "a restarted memory destination: $ERR"
msg PASS
