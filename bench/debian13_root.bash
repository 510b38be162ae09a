# Sourced by the benchmarks that run Debian 13's peers (generations.sh,
# server_cost.sh): sets D13ROOT, the Debian 13 root they chroot into.
# $D13ROOT when set; else scripts/debian13.sh's cached root while its /dev
# and /proc are mounted (the script mounts them only while it runs); else
# the development root /var/tmp/d13dev.
usable_root() { [ -x "$1/usr/bin/nbdcopy" ] && [ -c "$1/dev/null" ] && [ -e "$1/proc/self" ]; }
if [ -z "${D13ROOT:-}" ]; then
  D13ROOT=/var/cache/nbdcopy/debian13
  usable_root "$D13ROOT" || D13ROOT=/var/tmp/d13dev
fi
