#!/usr/bin/env bash
# --destination-is-zero (and its alias --target-is-zero): zero ranges of the
# source are not sent at all to an all-zero destination (no Zero/Trim
# requests), yet the result is identical.
source "$(dirname "$0")/lib/lib.sh"

size=$((5 * MiB + 1234))
make_test_file "$T/src.img" "$size"

for opt in --destination-is-zero --target-is-zero; do
    msg "$opt"
    start_nbdkit dst --filter=log memory size="$size" logfile="$T/requests-$opt.txt"
    run_copy "$opt" "$T/src.img" "$(uri_for dst)"
    assert_nbd_equals_file "$(uri_for dst)" "$T/src.img" "$opt copy"
    stop_server dst
    n=$(( $(log_count "$T/requests-$opt.txt" Zero) + $(log_count "$T/requests-$opt.txt" Trim) ))
    [[ $n -eq 0 ]] || fail "$opt: $n Zero/Trim requests sent"
    written=$(log_sum "$T/requests-$opt.txt" Write)
    ((written < size)) || fail "$opt: $written bytes written: zero ranges were written as data"
done
msg PASS
