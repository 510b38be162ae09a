#!/usr/bin/env bash
# Every source kind to every destination kind, byte-identical, for the pairs
# not covered by a named copy-*.sh or tls-psk-*.sh test (MATRIX_ALL=1 runs
# every pair).
#   sources:      file nbd stdin cmd qcow2 tls block
#   destinations: file nbd stdout cmd qcow2 tls block null
# stdin is a pipe, stdout is piped into a file;
# cmd destination = [ nbdkit file d.img ], qcow2 = [ qemu-nbd -f qcow2 d.qcow2 ];
# non-fresh destinations are pre-filled with random bytes.  Block kinds are
# left out (not skipped as a whole) when loop devices are unavailable.
# labels: root tls
source "$(dirname "$0")/lib/lib.sh"
require_cmd nbdkit qemu-nbd qemu-img psktool

covered=" file:file file:nbd nbd:file nbd:nbd stdin:nbd stdin:file nbd:stdout
          cmd:file file:qcow2 qcow2:file tls:file file:tls block:file
          file:block nbd:null "

size=$((3 * MiB + 2560))   # 512-aligned (qcow2, loop), not request-aligned
make_test_file "$T/src.img" "$size"
qemu-img convert -q -f raw -O qcow2 "$T/src.img" "$T/src.qcow2"
make_psk

sources="file nbd stdin cmd qcow2 tls"
dests="file nbd stdout cmd qcow2 tls null"
have_loop=yes
( require_root_loop ) >/dev/null 2>&1 || have_loop=no
if [[ $have_loop == yes ]]; then
    sources+=" block"; dests+=" block"
else
    msg "loop devices unavailable: block pairs left out"
fi

# Long-lived sources.
start_nbdkit snbd -r file "$T/src.img"
start_nbdkit stls --tls=require --tls-psk="$PSK_FILE" -r file "$T/src.img"
SNBD=$(uri_for snbd) STLS=$(tls_uri_for stls)
if [[ $have_loop == yes ]]; then
    cp "$T/src.img" "$T/srcblk.img"
    attach_loop "$T/srcblk.img" -r
    SRC_LOOP=$LOOPDEV
fi

src_args() { # KIND -> SRC array
    case $1 in
        file)  SRC=("$T/src.img") ;;
        nbd)   SRC=("$SNBD") ;;
        stdin) SRC=(-) ;;
        cmd)   SRC=("[" nbdkit -r file "$T/src.img" "]") ;;
        qcow2) SRC=("[" qemu-nbd -r -f qcow2 "$T/src.qcow2" "]") ;;
        tls)   SRC=("$STLS") ;;
        block) SRC=("$SRC_LOOP") ;;
    esac
}

dst_setup() { # KIND -> DST array
    rm -f "$T"/d.*
    case $1 in
        file)   make_random_file "$T/d.img" 8192; DST=("$T/d.img") ;;
        nbd)    start_nbdkit dnbd memory size="$size"; DST=("$(uri_for dnbd)") ;;
        stdout) DST=(-) ;;
        cmd)    make_random_file "$T/d.img" "$size"
                DST=("[" nbdkit file "$T/d.img" "]") ;;
        qcow2)  qemu-img create -q -f qcow2 "$T/d.qcow2" "$size"
                DST=("[" qemu-nbd -f qcow2 "$T/d.qcow2" "]") ;;
        tls)    make_random_file "$T/d.img" "$size"
                start_nbdkit dtls --tls=require --tls-psk="$PSK_FILE" file "$T/d.img"
                DST=("$(tls_uri_for dtls)") ;;
        block)  make_random_file "$T/d.img" "$size"
                attach_loop "$T/d.img"; DST=("$LOOPDEV") ;;
        null)   DST=(null:) ;;
    esac
}

dst_verify() { # KIND WHAT
    case $1 in
        file|stdout|cmd) assert_same_file "$T/src.img" "$T/d.img" "$2" ;;
        nbd)   assert_nbd_equals_file "$(uri_for dnbd)" "$T/src.img" "$2"
               stop_server dnbd ;;
        qcow2) qcow2_to_file "$T/d.qcow2" "$T/d.back"
               assert_same_file "$T/src.img" "$T/d.back" "$2" ;;
        tls)   stop_server dtls
               assert_same_file "$T/src.img" "$T/d.img" "$2" ;;
        block) cmp -s "$T/src.img" "$LOOPDEV" || fail "$2: device content differs"
               detach_loop "$LOOPDEV"
               assert_same_file "$T/src.img" "$T/d.img" "$2 (backing file)" ;;
        null)  ;;
    esac
}

run_pair() { # SRC-KIND DST-KIND, in a subshell: failures are collected
    src_args "$1"
    dst_setup "$2"
    local cmd=("$NBDCOPY" -- "${SRC[@]}" "${DST[@]}") rc
    # stdin source: fed through a pipe; stdout destination: piped to a file.
    # (A pipe only where one is used: each costs a process or two.)
    # shellcheck disable=SC2002 # (the cats: stdin is a pipe on purpose)
    if [[ $1 == stdin && $2 == stdout ]]; then
        cat "$T/src.img" | "${cmd[@]}" 2>"$T/pair.err" | cat >"$T/d.img"
        rc=${PIPESTATUS[1]}
    elif [[ $1 == stdin ]]; then
        cat "$T/src.img" | "${cmd[@]}" 2>"$T/pair.err" >/dev/null
        rc=${PIPESTATUS[1]}
    elif [[ $2 == stdout ]]; then
        "${cmd[@]}" 2>"$T/pair.err" </dev/null | cat >"$T/d.img"
        rc=${PIPESTATUS[0]}
    else
        rc=0
        "${cmd[@]}" 2>"$T/pair.err" </dev/null >/dev/null || rc=$?
    fi
    [[ $rc -eq 0 ]] || fail "exit status $rc: $(head -c 500 "$T/pair.err")"
    dst_verify "$2" "$1 -> $2"
}

failed=()
npairs=0
for s in $sources; do
    for d in $dests; do
        if [[ ${MATRIX_ALL:-0} != 1 && $covered == *" $s:$d "* ]]; then
            continue
        fi
        npairs=$((npairs + 1))
        if ( PIDS=() DAEMON_PIDS=() LOOPS=()
             trap release_resources EXIT
             run_pair "$s" "$d" ); then
            msg "ok   $s -> $d"
        else
            msg "FAIL $s -> $d"
            failed+=("$s->$d")
        fi
    done
done
msg "$npairs pairs, ${#failed[@]} failed"
[[ ${#failed[@]} -eq 0 ]] || fail "failed pairs: ${failed[*]}"
msg PASS
