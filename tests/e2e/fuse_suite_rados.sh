#!/usr/bin/env bash
# fuse_suite_rados.sh NAME TEST_BINARY
#
# Runs a FUSE suite built on tests/e2e/test_fuse_harness.c (NAME: caps, locks,
# semantics... see loligo_fuse_rados_test in fuse.cmake) against a real
# single-node Ceph cluster (../shared/ceph/start-cluster.sh: one mon, one
# memstore OSD) on a free loopback port in a temporary directory: two
# loligo-fuse mounts of one filesystem on RADOS.  The cluster is wiped on
# every exit path (a trap, and a detached watchdog for the case where this
# script is SIGKILLed by ctest).  A cluster that cannot start is a FAILURE.
set -uo pipefail

name=${1:?usage: $0 NAME TEST_BINARY}
bin=${2:?usage: $0 NAME TEST_BINARY}
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
# shellcheck source=tests/lib-ceph.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib-ceph.sh"
ceph_scripts=$shared/ceph
ceph_check
if [[ $(id -u) != 0 || ! -w /dev/fuse ]]; then
  echo "SKIP: needs root and /dev/fuse" >&2
  exit 77
fi

ceph_tmp_cluster "loligo-fuse-$name-rados"  # $tmp, $cluster: wiped on every exit path
if ! ceph_start "$cluster" "$tmp/start.log"; then
  echo "FAIL: could not start a Ceph cluster (see above)" >&2
  exit 1
fi
echo "ceph cluster up on 127.0.0.1:$ceph_port ($cluster)"

ceph_fg env LOLIGO_E2E_RADOS_CONF="$cluster/ceph.conf" CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-120}" timeout "${LOLIGO_SUITE_TIMEOUT:-540}" "$bin"
rc=$?
if ((rc != 0)); then
  echo "FAIL: the two-mount $name suite on rados exited $rc; cluster log tail:" >&2
  tail -20 "$cluster"/log/osd.0.log >&2 2>/dev/null
fi
exit $rc
