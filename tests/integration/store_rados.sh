#!/usr/bin/env bash
# store_rados.sh CONFORMANCE_BINARY [RADOS_FAILFAST_BINARY]
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
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
ceph=$shared/ceph
if [[ ! -x $ceph/start-cluster.sh ]]; then
  echo "FAIL: $ceph/start-cluster.sh not found: the RADOS suite needs ../shared/ceph next to the checkout" >&2
  exit 1
fi
for b in ceph-mon ceph-osd ceph rados uuidgen; do
  command -v "$b" >/dev/null || { echo "FAIL: $b not installed (apt-get install ceph-mon ceph-osd ceph-common uuid-runtime)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/loligo-store-rados-XXXXXX)
cluster=$tmp/ceph
cleanup() {
  "$ceph/stop-cluster.sh" "$cluster" --wipe >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
setsid bash -c 'while kill -0 '"$$"' 2>/dev/null; do sleep 1; done
  "'"$ceph"'/stop-cluster.sh" "'"$cluster"'" --wipe; rm -rf "'"$tmp"'"' </dev/null >/dev/null 2>&1 &

# start-cluster.sh uses PORT, PORT+1 and PORT+100..PORT+399: pick a free base, retry on a clash
started=0
for attempt in 1 2 3 4 5; do
  port=$(python3 -c 'import random,socket
for _ in range(100):
    p = random.randrange(20000, 30000)
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break')
  if CEPH_PORT=$port "$ceph/start-cluster.sh" "$cluster" >"$tmp/start.log" 2>&1; then
    started=1
    break
  fi
  echo "cluster start attempt $attempt on port $port failed:" >&2
  tail -5 "$tmp/start.log" >&2
  "$ceph/stop-cluster.sh" "$cluster" --wipe >/dev/null 2>&1
done
if ((!started)); then
  echo "FAIL: could not start a Ceph cluster (see above)" >&2
  exit 1
fi
echo "ceph cluster up on 127.0.0.1:$port ($cluster)"

LOLIGO_STORE_BACKEND=rados LOLIGO_STORE_RADOS_CONF=$cluster/ceph.conf LOLIGO_STORE_RADOS_POOL=rbdtest \
  CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60} timeout 240 "$bin"
rc=$?
if ((rc != 0)); then
  echo "FAIL: conformance suite against rados exited $rc; cluster logs:" >&2
  tail -20 "$cluster"/log/osd.0.log >&2 2>/dev/null
  exit $rc
fi

# last, as it kills the cluster: ops on a store whose cluster died fail with
# -ETIMEDOUT within the configured timeouts instead of hanging
if [[ -n $dies_bin ]]; then
  LOLIGO_STORE_RADOS_CONF=$cluster/ceph.conf LOLIGO_STORE_RADOS_DIR=$cluster timeout 120 "$dies_bin"
  rc=$?
  ((rc == 0)) || echo "FAIL: dead-cluster suite exited $rc" >&2
fi
exit $rc
