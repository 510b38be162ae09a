#!/usr/bin/env bash
# The second platform: builds this checkout in a Debian 13 (trixie) root and
# runs the end-to-end suite there, against what trixie ships (libnbd and
# nbdcopy 1.22, nbdkit 1.42, qemu 10, GCC 14), beside the Debian 12 run of
# scripts/test.sh. The unit tests (NBDCOPY_UNIT_TESTS=OFF here) are left to
# the Debian 12 and sanitizer runs: they test the same code with fakes, and
# building them is half of the build, which on a fresh machine is most of
# this script's time.
#
# The root is made with debootstrap from the mirror this machine's apt
# already uses, and kept in $NBDCOPY_DEBIAN13_ROOT (default
# /var/cache/nbdcopy/debian13) between runs; it is made again when it is
# broken (a package missing, chroot fails, an interrupted build) or when the
# package list below changed. ccache keeps its files beside it
# (/var/cache/nbdcopy/ccache-debian13), so a rerun builds in seconds.
# /proc, /dev, /dev/pts, /dev/shm, /sys and the checkout are bind-mounted for
# the run and unmounted at exit, failure and interrupt alike.
#
# Needs root (debootstrap, chroot, mount). CI runs as root; anywhere else
# this fails rather than pass silently: skip it with NBDCOPY_DEBIAN13=0
# (scripts/test.sh).
# Usage: scripts/debian13.sh [extra ctest arguments]
#        NBDCOPY_DEBIAN13_REBUILD=1 scripts/debian13.sh   (a fresh root)
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
cache=/var/cache/nbdcopy
root=${NBDCOPY_DEBIAN13_ROOT:-$cache/debian13}
ccache_dir=$cache/ccache-debian13
inside=/work/nbdcopy  # where the checkout appears in the root
target=$root          # the root being worked on (its .new while it is made)

# The build's and the tests' packages, the same roles as scripts/setup.sh's
# (no sanitizers or benchmarks: those run on Debian 12), and ssh + nc for
# the nbd+ssh:// tests.
packages=(
  build-essential cmake pkg-config
  libnbd-dev liburing-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libssl-dev
  nlohmann-json3-dev ccache
  nbdkit qemu-utils libnbd-bin nbd-server gddrescue gnutls-bin
  util-linux bash-completion man-db python3 strace procps iproute2 time
  e2fsprogs xfsprogs btrfs-progs
  openssh-server openssh-client netcat-openbsd
)
stamp_text="suite=trixie packages=${packages[*]}"

die() { echo "debian13.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] ||
  die "needs root (debootstrap, chroot, mount); run it as root, or skip it with NBDCOPY_DEBIAN13=0"
command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/setup.sh installs it)"

# The mirror the machine's apt uses (deb822 first, then sources.list),
# never one written here; NBDCOPY_DEBIAN13_MIRROR overrides.
find_mirror() {
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources \
    2>/dev/null | grep -v -- '-security' | head -n 1) || true
  [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v -- '-security' |
    head -n 1) || true
  echo "${NBDCOPY_DEBIAN13_MIRROR:-$uri}"
}

# One run at a time: the root and its mounts are shared.
mkdir -p "$cache" "$ccache_dir"
exec 9>"$cache/debian13.lock"
flock -n 9 || { echo "debian13.sh: waiting for another run to finish (its lock: $cache/debian13.lock)"; flock 9; }

# Every mount this run made, undone in reverse order at exit (and only
# those). Processes still running in the root (a test's server after an
# interrupt) are ours: they are stopped first, or the unmounts would fail.
mounted=()
cleanup() {
  local status=$? pid i real_root round found
  # A second Ctrl-C must not cut the clean-up short and leave mounts.
  trap '' INT TERM HUP
  trap - EXIT
  real_root=$(readlink -f "$target")
  # Rounds until none is left: a test's shell may start another process
  # (a server it restarts) while the round before went through /proc.
  for ((round = 0; round < 50 && ${#mounted[@]}; round++)); do
    found=false
    for pid in /proc/[0-9]*; do
      if [ "$(readlink "$pid/root" 2>/dev/null)" = "$real_root" ]; then
        kill -KILL "${pid#/proc/}" 2>/dev/null && found=true
      fi
    done
    $found || break
    sleep 0.2
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" || { sleep 1; umount "${mounted[i]}"; } ||
      { echo "debian13.sh: could not unmount ${mounted[i]}" >&2; status=1; }
  done
  mounted=()
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

bind() {  # bind SOURCE TARGET-INSIDE-THE-ROOT
  mkdir -p "$target$2"
  mountpoint -q "$target$2" && die "$target$2 is already a mount point (another run?)"
  mount --bind "$1" "$target$2"
  mounted+=("$target$2")
}
mount_system() {
  bind /proc /proc
  bind /sys /sys
  bind /dev /dev
  bind /dev/pts /dev/pts  # a bind of /dev carries neither devpts nor the tmpfs on /dev/shm
  bind /dev/shm /dev/shm
}
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}"; done
  mounted=()
}
in_root() {  # in_root COMMAND...: a clean environment, as root in the root
  chroot "$target" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}
# run_in_root COMMAND...: in_root, waited for so that a signal to this
# script (CI's SIGTERM to it alone) runs the clean-up at once, which stops
# what runs in the root, instead of after the command.
run_in_root() {
  in_root "$@" 9>&- &
  wait $!
}

root_is_usable() {
  [ "$(cat "$root/.nbdcopy-stamp" 2>/dev/null)" = "$stamp_text" ] || return 1
  chroot "$root" /bin/true 2>/dev/null || return 1
  local status
  status=$(chroot "$root" dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null) || return 1
  ! grep -qv "install ok installed" <<<"$status"
}

make_root() {
  local mirror
  mirror=$(find_mirror)
  [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or sources.list"
  target=$root.new
  if [ -e "$target" ]; then
    grep -q " $target/" /proc/mounts && die "$target has mounts left (another run?)"
    rm -rf --one-file-system "$target"
  fi
  echo "debian13.sh: making the Debian 13 root in $root (debootstrap from $mirror)"
  local start=$SECONDS
  debootstrap --variant=minbase trixie "$target" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    die "debootstrap failed: see $cache/debootstrap.log (tail: $(tail -n 3 "$cache/debootstrap.log"))"
  echo "debian13.sh: debootstrap took $((SECONDS - start)) s"
  # Daemons are not started by their packages (sshd would keep the root busy).
  printf '#!/bin/sh\nexit 101\n' >"$target/usr/sbin/policy-rc.d"
  chmod 755 "$target/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$target/etc/resolv.conf"
  # man-db would rebuild its database after every package (a minute here).
  echo "man-db man-db/auto-update boolean false" | chroot "$target" debconf-set-selections
  mount_system
  start=$SECONDS
  in_root apt-get update -qq
  run_in_root apt-get install -y -qq --no-install-recommends "${packages[@]}" >"$cache/packages.log" 2>&1 ||
    die "installing the packages failed: see $cache/packages.log"
  in_root apt-get clean
  echo "debian13.sh: the packages took $((SECONDS - start)) s"
  unmount_all
  echo "$stamp_text" >"$target/.nbdcopy-stamp"
  [ -e "$root" ] && rm -rf --one-file-system "$root"
  mv "$target" "$root"
}

target=$root
if [[ ${NBDCOPY_DEBIAN13_REBUILD:-0} != 0 ]] || ! root_is_usable; then
  if grep -q " $root/" /proc/mounts; then die "$root has mounts left (another run?)"; fi
  make_root
fi
target=$root

mount_system
# libnbd's own copy/ test scripts (compat-upstream-scripts runs them against
# ours): the source of the libnbd that trixie ships, fetched once into
# /usr/src of the root from the same mirror, kept with the root.
if ! compgen -G "$target/usr/src/libnbd-*/copy" >/dev/null; then
  start=$SECONDS
  mirror=$(find_mirror)
  echo "deb-src $mirror trixie main" >"$target/etc/apt/sources.list.d/nbdcopy-src.list"
  run_in_root bash -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends dpkg-dev &&
    cd /usr/src && apt-get source -qq libnbd && apt-get clean' >"$cache/source.log" 2>&1 ||
    die "fetching libnbd's source failed: see $cache/source.log"
  echo "debian13.sh: libnbd's source took $((SECONDS - start)) s"
fi
bind "$checkout" "$inside"
bind "$ccache_dir" /var/cache/ccache
versions=$(in_root dpkg-query -W -f='${Package} ${Version}, ' libnbd-bin nbdkit qemu-utils g++)
echo "debian13.sh: Debian 13: ${versions%, }"

start=$SECONDS
run_in_root bash -c '
  set -euo pipefail
  cd "$1"
  export CCACHE_DIR=/var/cache/ccache
  cmake -S . -B build-debian13 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNBDCOPY_WERROR=ON -DNBDCOPY_UNIT_TESTS=OFF \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache" >/dev/null
  cmake --build build-debian13 -j"$(nproc)"' bash "$inside"
echo "debian13.sh: the build took $((SECONDS - start)) s"

start=$SECONDS
jobs=$(scripts/test_jobs.sh)
run_in_root bash -c 'cd "$1" && shift && exec ctest --test-dir build-debian13 --output-on-failure "$@"' \
  bash "$inside" -j"$jobs" "$@"
echo "debian13.sh: the suite passed in $((SECONDS - start)) s"
