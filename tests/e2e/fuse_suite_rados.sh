#!/usr/bin/env bash
# fuse_suite_rados.sh NAME TEST_BINARY
#
# Runs a two-mount FUSE suite (NAME: caps = tests/e2e/test_fuse_caps.c, locks =
# tests/e2e/test_fuse_locks.c, file locks and eviction) against a real
# single-node Ceph cluster (../shared/ceph/start-cluster.sh: one mon, one
# memstore OSD) on a free loopback port in a temporary directory: two
# loligo-fuse mounts of one filesystem on RADOS.  The cluster is wiped on
# every exit path (a trap, and a detached watchdog for the case where this
# script is SIGKILLed by ctest).  A cluster that cannot start is a FAILURE.
set -uo pipefail

name=${1:?usage: $0 NAME TEST_BINARY}
bin=${2:?usage: $0 NAME TEST_BINARY}
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
ceph=$shared/ceph
if [[ ! -x $ceph/start-cluster.sh ]]; then
  echo "FAIL: $ceph/start-cluster.sh not found: the RADOS suite needs ../shared/ceph next to the checkout" >&2
  exit 1
fi
for b in ceph-mon ceph-osd ceph rados uuidgen; do
  command -v "$b" >/dev/null || { echo "FAIL: $b not installed (apt-get install ceph-mon ceph-osd ceph-common uuid-runtime)" >&2; exit 1; }
done
if [[ $(id -u) != 0 || ! -w /dev/fuse ]]; then
  echo "SKIP: needs root and /dev/fuse" >&2
  exit 77
fi

tmp=$(mktemp -d /tmp/loligo-fuse-$name-rados-XXXXXX)
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

LOLIGO_E2E_RADOS_CONF=$cluster/ceph.conf CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120} timeout 540 "$bin"
rc=$?
if ((rc != 0)); then
  echo "FAIL: the two-mount $name suite on rados exited $rc; cluster log tail:" >&2
  tail -20 "$cluster"/log/osd.0.log >&2 2>/dev/null
fi
exit $rc
