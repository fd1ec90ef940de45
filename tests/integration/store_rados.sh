#!/usr/bin/env bash
# store_rados.sh CONFORMANCE_BINARY [RADOS_FAILFAST_BINARY [CLIENTLIB_DATA_BINARY]]
#
# Runs the object store conformance suite against a real single-node Ceph
# cluster (../shared/ceph/start-cluster.sh: one mon, one memstore OSD, pool
# rbdtest) on a free loopback port in a temporary directory.  The cluster is
# wiped on every exit path: a trap for normal exits and signals, and a
# detached watchdog for the case where this script itself is SIGKILLed
# (ctest timeout).  A cluster that cannot start is a FAILURE, never a skip.
set -uo pipefail

bin=${1:?usage: $0 CONFORMANCE_BINARY [RADOS_FAILFAST_BINARY]}
dies_bin=${2:-}
data_bin=${3:-}
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
# shellcheck source=tests/lib-ceph.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib-ceph.sh"
ceph_scripts=$shared/ceph
ceph_check

ceph_tmp_cluster loligo-store-rados   # $tmp, $cluster: wiped on every exit path
if ! ceph_start "$cluster" "$tmp/start.log"; then
  echo "FAIL: could not start a Ceph cluster (see above)" >&2
  exit 1
fi
echo "ceph cluster up on 127.0.0.1:$ceph_port ($cluster)"

ceph_fg env LOLIGO_STORE_BACKEND=rados LOLIGO_STORE_RADOS_CONF="$cluster/ceph.conf" LOLIGO_STORE_RADOS_POOL=rbdtest \
  CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-60}" timeout 240 "$bin"
rc=$?
if ((rc != 0)); then
  echo "FAIL: conformance suite against rados exited $rc; cluster logs:" >&2
  tail -20 "$cluster"/log/osd.0.log >&2 2>/dev/null
  exit $rc
fi

# the client library's data path on the cluster: readahead in the reply's
# own buffers (store_aio_read_lend), over holes, short and missing objects
if [[ -n $data_bin ]]; then
  ceph_fg env LOLIGO_STORE_RADOS_CONF="$cluster/ceph.conf" LOLIGO_STORE_RADOS_POOL=rbdtest CK_RUN_CASE=rados \
    CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-120}" timeout 240 "$data_bin"
  rc=$?
  if ((rc != 0)); then
    echo "FAIL: client data path against rados exited $rc" >&2
    exit $rc
  fi
fi

# last, as it kills the cluster: ops on a store whose cluster died fail with
# -ETIMEDOUT within the configured timeouts instead of hanging
if [[ -n $dies_bin ]]; then
  ceph_fg env LOLIGO_STORE_RADOS_CONF="$cluster/ceph.conf" LOLIGO_STORE_RADOS_DIR="$cluster" timeout 120 "$dies_bin"
  rc=$?
  ((rc == 0)) || echo "FAIL: dead-cluster suite exited $rc" >&2
fi
exit $rc
