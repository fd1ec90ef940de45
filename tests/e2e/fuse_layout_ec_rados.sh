#!/usr/bin/env bash
# fuse_layout_ec_rados.sh TEST_BINARY
#
# File data in an erasure-coded RADOS pool (issue 22.4): the test_fuse_layout
# case "ec_pool" on a Ceph cluster that can hold one.  The single-node
# cluster of ../shared/ceph/start-cluster.sh cannot as it starts: an EC pool
# needs k + m OSDs in distinct failure domains (k >= 2, m >= 1: k=2 m=1 with
# crush-failure-domain=osd is the smallest Ceph accepts) and partial
# overwrites of its objects (allow_ec_overwrites) need BlueStore OSDs
# ("pool must only be stored on bluestore": the default memstore OSD is
# refused).  So this starts that cluster with CEPH_STORE=bluestore, adds
# osd.1 and osd.2 beside osd.0 (same host, CRUSH chooses among OSDs:
# osd_crush_chooseleaf_type = 0), makes the profile k=2 m=1 and the pool,
# and runs the case with LOLIGO_E2E_EC_POOL naming it.  The cluster is wiped
# on every exit path (tests/lib-ceph.sh).  A cluster that cannot start is a
# FAILURE.
set -uo pipefail

bin=${1:?usage: $0 TEST_BINARY}
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
# shellcheck source=tests/lib-ceph.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib-ceph.sh"
ceph_scripts=$shared/ceph
ceph_check
if [[ $(id -u) != 0 || ! -w /dev/fuse ]]; then
  echo "SKIP: needs root and /dev/fuse" >&2
  exit 77
fi

ceph_tmp_cluster "loligo-fuse-layout-ec"  # $tmp, $cluster: wiped on every exit path
if ! ceph_start "$cluster" "$tmp/start.log" CEPH_STORE=bluestore CEPH_STORE_GB=4; then
  echo "FAIL: could not start a Ceph cluster (see above)" >&2
  exit 1
fi
C() { timeout 60 ceph -c "$cluster/ceph.conf" "$@"; }
for i in 1 2; do
  ceph_add_osd "$cluster" "$i" || { echo "FAIL: could not add osd.$i (see $cluster/log/osd.$i.*)" >&2; exit 1; }
done
up=0
for _ in $(seq 1 300); do
  up=$(C osd stat -f json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["num_up_osds"])' 2>/dev/null)
  [[ $up == 3 ]] && break
  sleep 0.2
done
[[ $up == 3 ]] || { echo "FAIL: $up of 3 OSDs up" >&2; exit 1; }
pool=loligo_ec$$
C osd erasure-code-profile set loligo_k2m1 k=2 m=1 crush-failure-domain=osd &&
  C osd pool create "$pool" 8 8 erasure loligo_k2m1 &&
  C osd pool set "$pool" allow_ec_overwrites true ||
  { echo "FAIL: could not make the erasure-coded pool" >&2; exit 1; }
echo "ceph cluster up on 127.0.0.1:$ceph_port ($cluster): 3 BlueStore OSDs, EC pool $pool (k=2 m=1)"

ceph_fg env LOLIGO_E2E_RADOS_CONF="$cluster/ceph.conf" LOLIGO_E2E_EC_POOL="$pool" CK_RUN_CASE=ec_pool \
  CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-120}" timeout "${LOLIGO_SUITE_TIMEOUT:-540}" "$bin"
rc=$?
((rc == 0)) || echo "FAIL: test_fuse_layout ec_pool on rados exited $rc" >&2
exit $rc
