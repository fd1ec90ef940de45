#!/usr/bin/env bash
# install-deps.sh - install the Debian packages loligo needs to build, test
# and run.  Called by ./vstart.sh and ./run-make-check.sh; safe to re-run
# (only what is missing is installed).
#   --runtime   only what vstart needs (build + fuse)
#   (default)   everything the test suite uses too (ceph, qemu, clang)
#   --bench     that, and what tools/bench/ compares against (fio, ceph-fuse
#               and ceph-mds for CephFS, strace, perf)
set -euo pipefail

BUILD_PKGS=(build-essential cmake ninja-build pkg-config
            libfuse3-dev fuse3 acl librados-dev libradospp-dev liburing-dev liburcu-dev check
            liblmdb-dev libinih-dev libjson-c-dev systemtap-sdt-dev libtirpc-dev libssl-dev libmicrohttpd-dev libkrb5-dev)
TEST_PKGS=(clang libclang-rt-14-dev ceph-mon ceph-osd ceph-common uuid-runtime
           qemu-system-x86 busybox-static valgrind gdb psmisc procps logrotate python3-prometheus-client
           dpkg-dev debhelper fakeroot lintian iproute2 systemd gnuplot-nox
           krb5-kdc krb5-admin-server krb5-user)

BENCH_PKGS=(fio ceph-fuse ceph-mds strace linux-perf hyperfine)

pkgs=("${BUILD_PKGS[@]}")
[[ "${1:-}" == --runtime ]] || pkgs+=("${TEST_PKGS[@]}")
[[ "${1:-}" != --bench ]] || pkgs+=("${BENCH_PKGS[@]}")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0

SUDO=
if [[ $(id -u) != 0 ]]; then
	command -v sudo >/dev/null || { echo "install-deps: missing packages ${missing[*]} and not root (no sudo)" >&2; exit 1; }
	SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's lists may be absent on a fresh machine; another apt may hold the lock.
for attempt in 1 2 3 4 5 6; do
	if $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
		exit 0
	fi
	echo "install-deps: apt-get failed (attempt $attempt), retrying in 10 s" >&2
	sleep 10
done
echo "install-deps: could not install ${missing[*]}" >&2
exit 1
