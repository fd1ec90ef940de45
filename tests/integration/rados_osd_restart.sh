#!/usr/bin/env bash
# rados_osd_restart.sh BUILD_DIR
#
# A dead OSD is survived and recovered from (issue 9.4), end to end on a
# real single-node Ceph cluster (../shared/ceph, bluestore so that a killed
# OSD keeps what it acknowledged): loligo-mds and a loligo-fuse mount on
# RADOS, a writer appending 64 KiB records and fsyncing each; the OSD is
# killed (kill -9: it never tells the monitor) under that load, and started
# again.  While it is down, fsync fails with ETIMEDOUT after the configured
# rados_osd_op_timeout and the MDS stays up; once it is back the same mount
# (no remount) takes writes again, and every byte an fsync acknowledged is
# there, in order.  The cluster, the daemons and the mount are torn down on
# every exit path (trap, plus a watchdog if this script is SIGKILLed).
set -uo pipefail

build=${1:?usage: $0 BUILD_DIR}
shared=${LOLIGO_SHARED_DIR:-${LOLIGO_SOURCE_DIR:?LOLIGO_SOURCE_DIR not set}/../shared}
ceph=$shared/ceph
MDS=$build/mds/loligo-mds
FUSE=$build/client/fuse/loligo-fuse
for b in ceph-mon ceph-osd ceph rados uuidgen fusermount3 /usr/bin/python3; do
  command -v "$b" >/dev/null || { echo "FAIL: $b not installed" >&2; exit 1; }
done
[[ -x $ceph/start-cluster.sh ]] || { echo "FAIL: $ceph/start-cluster.sh not found" >&2; exit 1; }
if [[ $(id -u) != 0 || ! -w /dev/fuse ]]; then
  echo "FAIL: needs root and /dev/fuse (a real FUSE mount)" >&2
  exit 1
fi

tmp=$(mktemp -d /tmp/loligo-osd-restart-XXXXXX)
cluster=$tmp/ceph
mnt=$tmp/mnt
mkdir -p "$mnt"
mds_pid= fuse_pid= load_pid=
cleanup() {
  [[ -n $load_pid ]] && kill "$load_pid" 2>/dev/null
  if grep -q " $mnt fuse" /proc/mounts; then fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"; fi
  [[ -n $fuse_pid ]] && { kill "$fuse_pid" 2>/dev/null; sleep 0.5; kill -9 "$fuse_pid" 2>/dev/null; }
  [[ -n $mds_pid ]] && kill -9 "$mds_pid" 2>/dev/null
  "$ceph/stop-cluster.sh" "$cluster" --wipe >/dev/null 2>&1
  [[ -n ${LOLIGO_TEST_KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
setsid bash -c 'while kill -0 '"$$"' 2>/dev/null; do sleep 1; done
  grep -q " '"$mnt"' fuse" /proc/mounts && fusermount3 -uz "'"$mnt"'"
  "'"$ceph"'/stop-cluster.sh" "'"$cluster"'" --wipe; [[ -n "'"${LOLIGO_TEST_KEEP:-}"'" ]] || rm -rf "'"$tmp"'"' </dev/null >/dev/null 2>&1 &

fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/mds.log "$tmp"/client.log "$tmp"/load.log; do
    [[ -f $f ]] && { echo "---- $f" >&2; tail -15 "$f" >&2; }
  done
  exit 1
}
# wait_for SECONDS CMD...: poll CMD every 0.1 s
wait_for() {
  local secs=$1; shift
  local end=$((SECONDS + secs))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

started=0
for attempt in 1 2 3; do
  port=$(/usr/bin/python3 -c 'import random,socket
for _ in range(100):
    p = random.randrange(20000, 30000)
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break')
  if CEPH_PORT=$port CEPH_STORE=bluestore CEPH_STORE_GB=4 "$ceph/start-cluster.sh" "$cluster" >"$tmp/start.log" 2>&1; then
    started=1
    break
  fi
  tail -5 "$tmp/start.log" >&2
  "$ceph/stop-cluster.sh" "$cluster" --wipe >/dev/null 2>&1
done
((started)) || fail "could not start a Ceph cluster"
echo "ceph cluster up on 127.0.0.1:$port"

# short timeouts: the outage is seen within seconds and the test stays fast
cat >"$tmp/loligo.conf" <<EOF
[global]
store_backend = rados
rados_conf = $cluster/ceph.conf
rados_osd_op_timeout = 2
rados_mon_op_timeout = 5
fs_name = osdrestart
[mds]
mds_addr = 127.0.0.1
mds_port = 0
admin_socket = $tmp/mds.asok
log_file = $tmp/mds.log
mds_journal_retry_interval = 0.3
mds_tick_interval = 0.2
mds_keyring = $tmp/keyring
[client]
admin_socket = $tmp/client.asok
log_file = $tmp/client.log
client_flush_interval = 1
# an fsync also waits for the MDS to journal the size it reports, which it
# cannot while the OSD is down: bounded too (by default that wait is hard)
client_request_timeout = 5
client_keyring = $tmp/client.keyring
EOF
"$build/tools/cli/loligo" auth get-or-create client.admin --keyring "$tmp/keyring" -o "$tmp/client.keyring" \
  >"$tmp/auth.out" 2>&1 || fail "keyrings: $(cat "$tmp/auth.out")"
"$MDS" -c "$tmp/loligo.conf" --mkfs >"$tmp/mkfs.out" 2>&1 || fail "mkfs: $(cat "$tmp/mkfs.out")"
setsid "$MDS" -c "$tmp/loligo.conf" --port-file "$tmp/mds.port" >"$tmp/mds.out" 2>&1 &
mds_pid=$!
wait_for 30 test -s "$tmp/mds.port" || fail "the MDS did not start: $(cat "$tmp/mds.out")"
setsid "$FUSE" -f -c "$tmp/loligo.conf" -o "mds=127.0.0.1:$(cat "$tmp/mds.port")" "$mnt" >"$tmp/fuse.out" 2>&1 &
fuse_pid=$!
wait_for 30 grep -q " $mnt fuse" /proc/mounts || fail "not mounted: $(cat "$tmp/fuse.out")"

# the writer: 64 KiB records "%08d" * 8192 at offset i * 64 KiB, fsync after
# each; one log line per fsync (ok DURABLE | err ERRNO); stops at $tmp/stop
/usr/bin/python3 - "$mnt/load" "$tmp/load.log" "$tmp/stop" <<'PY' &
import errno, os, sys, time
path, logp, stop = sys.argv[1:]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
log = open(logp, "w", buffering=1)
i = off = durable = 0
while not os.path.exists(stop):
    try:
        if off == i * 65536:
            os.pwrite(fd, (b"%08d" % i) * 8192, off)
            off += 65536
            i += 1
        os.fsync(fd)
        durable = off
        log.write("ok %d\n" % durable)
    except OSError as e:
        log.write("err %s %.1f\n" % (errno.errorcode.get(e.errno, e.errno), time.time()))
        time.sleep(0.2)
log.write("END %d\n" % durable)
PY
load_pid=$!
oks() { local n; n=$(grep -c '^ok' "$tmp/load.log" 2>/dev/null); echo "${n:-0}"; }
oks_at_least() { (($(oks) >= $1)); }
wait_for 30 oks_at_least 20 || fail "the writer does not get going"

osd_pid=$(cat "$cluster/run/osd.0.pid")
t_kill=$(date +%s.%N)
kill -9 "$osd_pid"
echo "osd.0 killed under load (after $(oks) fsyncs)"
wait_for 30 grep -q '^err ETIMEDOUT' "$tmp/load.log" || fail "no ETIMEDOUT within 30 s while the OSD is down"
# (for the record: the writer stamps each failure)
awk -v t="$t_kill" '/^err ETIMEDOUT/ { printf "first ETIMEDOUT %.1f s after the kill (rados_osd_op_timeout 2, client_request_timeout 5)\n", $3 - t; exit }' \
  "$tmp/load.log"
before=$(oks)
sleep 3   # a few more failures: the MDS's journal writes time out too
kill -0 "$mds_pid" 2>/dev/null || fail "the MDS died while the OSD was down"
kill -0 "$fuse_pid" 2>/dev/null || fail "loligo-fuse died while the OSD was down"
ceph-osd -c "$cluster/ceph.conf" -i 0 >>"$cluster/log/osd.0.out" 2>&1 || fail "cannot start osd.0 again"
echo "osd.0 started again"
t0=$SECONDS
t_up=$(date +%s.%N)
wait_for 90 oks_at_least $((before + 1)) || fail "no fsync succeeds once the OSD is back ($(oks) fsyncs, $before before the restart)"
echo "first fsync after the restart $(awk -v a="$t_up" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after starting osd.0"
wait_for 90 oks_at_least $((before + 20)) || fail "the mount does not carry on once the OSD is back ($(oks) fsyncs, $before before the restart)"
echo "writes carry on $((SECONDS - t0)) s after the OSD restart"
touch "$tmp/stop"
wait "$load_pid"
load_pid=
grep -q '^END' "$tmp/load.log" || fail "the writer did not finish"

# every byte an fsync acknowledged, through the same mount
durable=$(sed -n 's/^END //p' "$tmp/load.log")
/usr/bin/python3 - "$mnt/load" "$durable" <<'PY' || fail "fsync'd data is missing or wrong"
import sys
path, durable = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    for i in range(durable // 65536):
        f.seek(i * 65536)
        rec = f.read(65536)
        if rec != (b"%08d" % i) * 8192:
            sys.exit("record %d of %d (offset %d) is wrong: %r..." % (i, durable // 65536, i * 65536, rec[:16]))
print("all %d fsync'd records intact" % (durable // 65536))
PY
grep -q " $mnt fuse" /proc/mounts || fail "the mount went away"
kill -0 "$mds_pid" 2>/dev/null || fail "the MDS died"
kill -0 "$fuse_pid" 2>/dev/null || fail "loligo-fuse died"
# the MDS is read-write again, and says so
rw() { "$build/tools/cli/loligo" --format json daemon "$tmp/mds.asok" status 2>/dev/null |
       grep -q '"read_only": *false'; }
wait_for 20 rw || fail "the MDS stays read-only after the OSD came back"
echo "PASS: the OSD was killed and restarted under load; the same mount carried on, every fsync'd byte is there"
exit 0
