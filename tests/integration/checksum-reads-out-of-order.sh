#!/usr/bin/env bash
# --checksum hashes the bytes in image order although the parallel copy's
# reads finish out of order: the source is an nbdkit sh plugin (parallel
# requests) that answers reads inside some ranges 0.3 s late and the rest
# at once, and logs when each read ends. The log shows reads of later
# offsets ending before a delayed earlier one (the test proves nothing
# otherwise); the digest is still sha256sum's and the copy is identical,
# with 1, 2 and 4 connections and small and large requests, and to null:.
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit sha256sum cmp

cat >"$T/slow.sh" <<'EOF'
#!/bin/sh
# nbdkit sh plugin: file=PATH; reads that start in a slow MiB (1, 4 and 6)
# are answered 0.3 s late; "end OFFSET" is logged as each read ends.
f=$tmpdir/file
case $1 in
    config)
        case $2 in
            file) ln -sf "$(realpath "$3")" "$f" ;;
            log) ln -sf "$(realpath "$3")" "$tmpdir/log" ;;
            *) echo "unknown parameter $2" >&2; exit 1 ;;
        esac ;;
    thread_model) echo parallel ;;
    get_size) exec stat -Lc %s "$f" ;;
    can_multi_conn) exit 0 ;;
    can_write|can_extents|can_zero|can_trim|can_flush) exit 3 ;;
    pread)
        case $(($4 / 1048576)) in
            1|4|6) sleep 0.3 ;;
        esac
        dd if="$f" skip="$4" count="$3" bs=1M iflag=count_bytes,skip_bytes status=none || exit 1
        echo "end $4" >>"$tmpdir/log" ;;
    *) exit 2 ;;
esac
EOF
chmod +x "$T/slow.sh"

size=$((8 * MiB + 777))
make_random_file "$T/src.img" "$size"
write_zeroes "$T/src.img" $((2 * MiB)) $((MiB / 2))  # zeroes inside the data
sum=$(sha256sum <"$T/src.img" | cut -d' ' -f1)
: >"$T/reads.log"
start_nbdkit slow sh "$T/slow.sh" file="$T/src.img" log="$T/reads.log"
uri=$(uri_for slow)

# out_of_order: some read ended after a read of a later offset did.
out_of_order() {
    local line offset highest=-1 later=0
    while read -r _ offset; do
        ((offset < highest)) && later=$((later + 1))
        ((offset > highest)) && highest=$offset
    done <"$T/reads.log"
    msg "$later read(s) ended after a read of a later offset"
    ((later > 0))
}

for args in "-C 1 --request-size=64K" "-C 2 --request-size=256K" "-C 4" "-C 4 --request-size=16K"; do
    : >"$T/reads.log"
    rm -f "$T/dst.img"
    # shellcheck disable=SC2086
    run_copy --checksum $args "$uri" "$T/dst.img" >"$T/sum.out"
    [[ $(<"$T/sum.out") == "$sum  $T/dst.img" ]] ||
        fail "$args: printed '$(<"$T/sum.out")', sha256sum says $sum"
    cmp "$T/src.img" "$T/dst.img" || fail "$args: the copy differs"
    out_of_order || fail "$args: every read ended in order: the test proves nothing"
done

: >"$T/reads.log"
run_copy --checksum=sha512 -C 4 --request-size=128K "$uri" null: >"$T/sum.out"
want=$(sha512sum <"$T/src.img" | cut -d' ' -f1)
[[ $(<"$T/sum.out") == "$want  $uri" ]] || fail "null:: printed '$(<"$T/sum.out")', want $want"
out_of_order || fail "null:: every read ended in order: the test proves nothing"
stop_server slow
msg PASS
