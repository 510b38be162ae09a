#!/usr/bin/env bash
# Holes go over as zero requests, never as writes.  The nbdkit log filter on
# an NBD memory destination records every request:
#  - a sparse file (64M, 1.3M of data at odd offsets) and an nbdkit
#    sparse-random source, with and without --no-extents (then zero
#    detection must find the holes): every non-zero source byte is inside a
#    Write, no Write touches a 64K-aligned block that is all zero in the
#    source, written bytes stay close to the data bytes, and Write + Zero +
#    Trim requests together cover the whole export;
#  - --allocated: the same, and no Trim request at all and every Zero says
#    trim=0;
#  - --destination-is-zero onto a fresh memory export: no Zero or Trim
#    request at all, only the data is written.
# And for a local file destination: --allocated leaves it fully allocated
# (st_blocks), without it a fresh file stays sparse.  The exported / copied
# bytes are compared with the source every time.
source "$(dirname "$0")/lib/lib.sh"
require_cmd qemu-img python3

size=$((64 * MiB))
gran=65536

# The sparse file: random chunks at odd offsets and odd lengths.
truncate -s "$size" "$T/src.img"
chunks=(0:$MiB $((5 * MiB + 12345)):300000 $((20 * MiB)):4096
        $((33 * MiB + 1)):1 $((47 * MiB + 65535)):2 $((size - 1000)):1000)
data=0
for c in "${chunks[@]}"; do
    write_random "$T/src.img" "${c%%:*}" "${c#*:}"
    data=$((data + ${c#*:}))
done
# Allow each chunk to be written with whole 64K blocks around it.
slack=$((${#chunks[@]} * 2 * gran))

start_nbdkit sr -r sparse-random size="$size" percent=10 seed=7 runlength=65536
sr="nbd+unix:///?socket=$T/sr.sock" # (uri_for sr, without a subshell each time)
nbd_to_file "$sr" "$size" "$T/sr.ref"
sr_data=$(tr -d '\000' <"$T/sr.ref" | wc -c)  # roughly its data bytes
((sr_data > 256 * 1024 && sr_data < size / 4)) || fail "sparse-random source has $sr_data data bytes"
# Zero detection works in blocks of the plan's sparse size, raised to the
# destination's preferred block size: nbdkit 1.42's memory plugin prefers
# 32K (1.32's says nothing: 4K). The data a copy must write is then the
# source's blocks of that size that hold a non-zero byte.
preferred=$(nbdkit -U - memory size=1M --run 'nbdinfo --no-content "$uri"' |
    sed -n 's/^[[:space:]]*block_size_preferred: \([0-9]*\).*/\1/p')
sparse_block=$((${preferred:-0} > 4096 ? preferred : 4096))
sr_data_blocks=$(/usr/bin/python3 -S - "$T/sr.ref" "$sparse_block" <<'PY'
import sys
data, block = open(sys.argv[1], "rb").read(), int(sys.argv[2])
zero = bytes(block)
print(sum(len(data[i:i + block]) for i in range(0, len(data), block) if data[i:i + block] != zero[:len(data[i:i + block])]))
PY
) || fail "could not count the source's data blocks"
msg "sparse-random: $sr_data data bytes, $sr_data_blocks in ${sparse_block}-byte blocks"

# check_requests LOG REF DATA WHAT: the request pattern of a copy of REF.
# (One python3 for all the numbers; NTRIM and NZERO are left for the
# --allocated checks.)
check_requests() {
    local log=$1 ref=$2 d=$3 what=$4
    local written zeroed trimmed missing inholes gaps
    logtool sum "$log" Write -- sum "$log" Zero -- sum "$log" Trim \
        -- uncovered "$log" Write "$ref" -- holebytes "$log" Write "$ref" "$gran" \
        -- span "$log" Write,Zero,Trim "$size" -- count "$log" Trim -- count "$log" Zero \
        >"$T/counts" || fail "$what: engine-logtool.py failed"
    { read -r written && read -r zeroed && read -r trimmed && read -r missing &&
        read -r inholes && read -r gaps && read -r NTRIM && read -r NZERO; } <"$T/counts" ||
        fail "$what: engine-logtool.py printed too little"
    msg "  $what: written $written zeroed $zeroed trimmed $trimmed (data ~$d)"
    [[ $missing -eq 0 ]] || fail "$what: $missing non-zero bytes not covered by any Write"
    [[ $inholes -eq 0 ]] ||
        fail "$what: $inholes bytes written inside all-zero ${gran}-byte blocks (holes sent as data)"
    ((written <= d + slack + MiB)) || fail "$what: $written bytes written for ~$d bytes of data"
    [[ $gaps -eq 0 ]] || fail "$what: $gaps bytes of the export covered by no Write/Zero/Trim"
    ((zeroed + trimmed >= size - written)) || fail "$what: holes not zeroed"
}

# copy_to_mem NAME SRC REF DATA OPTIONS...
copy_to_mem() {
    local name=$1 src=$2 ref=$3 d=$4; shift 4
    local log=$T/req-$name.txt
    start_nbdkit dst --filter=log memory size="$size" logfile="$log"
    run_copy "$@" "$src" "nbd+unix:///?socket=$T/dst.sock"
    # qemu-img compares the export with the reference itself (no 64M
    # read-back file to write and cmp).
    qemu-img compare -f raw -F raw "$ref" "nbd+unix:///?socket=$T/dst.sock" \
        >"$T/compare.out" 2>&1 || fail "$name: content differs ($(<"$T/compare.out"))"
    stop_server dst
    LOGF=$log
}

msg "holes become Zero/Trim requests"
copy_to_mem file "$T/src.img" "$T/src.img" "$data"
check_requests "$LOGF" "$T/src.img" "$data" "file source"
copy_to_mem file-noext "$T/src.img" "$T/src.img" "$data" --no-extents
check_requests "$LOGF" "$T/src.img" "$data" "file source, --no-extents"
copy_to_mem sr "$sr" "$T/sr.ref" "$sr_data" -C 2 -T 2
check_requests "$LOGF" "$T/sr.ref" "$sr_data" "sparse-random source"
copy_to_mem sr-noext "$sr" "$T/sr.ref" "$sr_data_blocks" --no-extents -C 2 -T 2
check_requests "$LOGF" "$T/sr.ref" "$sr_data_blocks" "sparse-random source, --no-extents"

msg "--allocated: no trimming"
for src in file sr; do
    if [[ $src == file ]]; then s=$T/src.img r=$T/src.img d=$data
    else s=$sr r=$T/sr.ref d=$sr_data; fi
    for extra in "" --no-extents; do
        # Without extents, zero detection: the source's data blocks.
        [[ $src == sr && $extra == --no-extents ]] && d=$sr_data_blocks
        copy_to_mem "alloc-$src$extra" "$s" "$r" "$d" --allocated $extra
        check_requests "$LOGF" "$r" "$d" "--allocated $src $extra"
        [[ $NTRIM -eq 0 ]] || fail "--allocated $src $extra: $NTRIM Trim requests"
        nz=$NZERO
        ((nz > 0)) || fail "--allocated $src $extra: no Zero requests"
        # Log format: "Zero id=N offset=0x.. count=0x.. trim=0|1 fua=0|1 fast=0|1"
        [[ $(grep -cE 'connection=[0-9]+ Zero id=.* trim=0 ' "$LOGF") -eq $nz ]] ||
            fail "--allocated $src $extra: Zero requests allowing trim: $(grep -E ' Zero id=' "$LOGF" | grep -v ' trim=0 ' | head -1)"
    done
done

msg "--destination-is-zero on a fresh export: nothing but writes"
for src in file sr; do
    if [[ $src == file ]]; then s=$T/src.img r=$T/src.img d=$data
    else s=$sr r=$T/sr.ref d=$sr_data; fi
    copy_to_mem "dz-$src" "$s" "$r" "$d" --destination-is-zero -C 2 -T 2
    logtool count "$LOGF" Zero,Trim -- uncovered "$LOGF" Write "$r" -- sum "$LOGF" Write \
        >"$T/counts" || fail "--destination-is-zero $src: engine-logtool.py failed"
    { read -r n && read -r missing && read -r written; } <"$T/counts" ||
        fail "--destination-is-zero $src: engine-logtool.py printed too little"
    [[ $n -eq 0 ]] || fail "--destination-is-zero $src: $n Zero/Trim requests"
    [[ $missing -eq 0 ]] || fail "--destination-is-zero $src: $missing non-zero bytes not written"
    ((written <= d + slack + MiB)) || fail "--destination-is-zero $src: $written bytes written"
done

msg "file destination: --allocated allocates everything, default stays sparse"
truncate -s "$size" "$T/probe.img"
if [[ $(stat -c %b "$T/probe.img") -ne 0 ]]; then
    msg "this file system does not do sparse files: allocation checks skipped"
else
    allocated() { echo $(($(stat -c '%b * %B' "$1"))); }
    # Garbage to copy over (random: zeroes not written cannot pass), made
    # once: cp costs less than /dev/urandom.
    make_random_file "$T/garbage.img" "$size"
    for src in file sr; do
        if [[ $src == file ]]; then s=$T/src.img r=$T/src.img
        else s=$sr r=$T/sr.ref; fi
        rm -f "$T/out.img"
        run_copy --allocated "$s" "$T/out.img"
        assert_same_file "$r" "$T/out.img" "--allocated $src to a file"
        a=$(allocated "$T/out.img")
        msg "  --allocated $src: $a bytes allocated of $size"
        ((a >= size)) || fail "--allocated $src: file has only $a of $size bytes allocated"

        rm -f "$T/out.img"
        run_copy "$s" "$T/out.img"
        assert_same_file "$r" "$T/out.img" "$src to a file"
        a=$(allocated "$T/out.img")
        msg "  default $src: $a bytes allocated of $size"
        ((a <= size / 2)) || fail "$src to a new file: $a of $size bytes allocated, holes were filled"

        # Over an existing file full of garbage: zeroes are really written.
        cp "$T/garbage.img" "$T/out.img"
        run_copy --allocated "$s" "$T/out.img"
        assert_same_file "$r" "$T/out.img" "--allocated $src over garbage"
        a=$(allocated "$T/out.img")
        ((a >= size)) || fail "--allocated $src over garbage: only $a bytes allocated"
    done
fi
msg PASS
