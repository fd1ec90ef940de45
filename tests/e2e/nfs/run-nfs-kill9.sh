#!/usr/bin/env bash
# run-nfs-kill9.sh - kill -9 of the NFS gateway under the Linux kernel
# client (qemu) holding an NFSv4.1 fcntl lock and writing: the lock is
# reclaimed from the restarted gateway (same nfs_gateway_id, same
# address), never granted to another lock-owner meanwhile, and the writes
# resume; prints how long they stalled.  A measurement (docs/BENCHMARKS.md),
# not a ctest: it boots one guest.
#
#   run-nfs-kill9.sh BUILD_DIR
#
# Host: a loligo-mds and a loligo-fuse --nfs 127.0.0.1:PORT on a temp dir,
# with the defaults that matter here (nfs4_lease_time 90 s, nfs4_grace_time
# 15 s) and client_reclaim_dir in the temp dir (the restarted loligo-fuse
# evicts its predecessor's MDS session at mount: client/reclaim.c).  Guest
# (guest-kill9.sh, lockwriter.c): lock, write a record every 100 ms, ask
# for the kill after 10; the driver then kill -9s loligo-fuse, unmounts its
# dead FUSE mount, starts it again on the same port and says "restarted";
# the guest writes 20 more records, checks them all and reports.  Pass:
# "KILL9 OK" and the longest stall under nfs4_lease_time + 5 s.
# Everything started is stopped on exit, also on failure.
set -u
BUILD=${1:?usage: run-nfs-kill9.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
KCLIENT=${KCLIENT_SCRIPT:-$HERE/run-kernel-client.sh}
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
CLI=$BUILD/tools/cli/loligo
LEASE=${KILL9_LEASE:-90}
if [ -z "${KCLIENT_TIMEOUT:-}" ]; then
	if [ -w /dev/kvm ] && grep -qE '\b(vmx|svm)\b' /proc/cpuinfo && [ "${KCLIENT_ACCEL:-kvm}" != tcg ]; then
		KCLIENT_TIMEOUT=300
	else
		KCLIENT_TIMEOUT=600
	fi
fi
missing() { echo "FAIL: $1 missing ($2)"; exit 1; }
[ "$(id -u)" = 0 ] || missing "root" "run as root: it makes a FUSE mount and boots qemu"
[ -e /dev/fuse ] || missing "/dev/fuse" "modprobe fuse"
command -v fusermount3 > /dev/null || missing "fusermount3" "apt-get install fuse3"
command -v qemu-system-x86_64 > /dev/null || missing "qemu-system-x86_64" "apt-get install qemu-system-x86 busybox-static"
for b in "$MDS" "$FUSE" "$CLI"; do [ -x "$b" ] || missing "$b" "ninja -C $BUILD"; done

T=$(mktemp -d /tmp/loligo-nfs-kill9.XXXXXX)
MNT=$T/mnt
FUSE_PID=
MDS_PID=
GPID=
FAILED=0
ptree() { local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do ptree "$c"; done; echo "$1"; }
cleanup() {
	if [ -n "$GPID" ] && kill -0 "$GPID" 2>/dev/null; then kill -TERM $(ptree "$GPID") 2>/dev/null; sleep 2; kill -KILL $(ptree "$GPID") 2>/dev/null; fi
	[ -n "$FUSE_PID" ] && kill -KILL "$FUSE_PID" 2>/dev/null
	fusermount3 -uz "$MNT" 2>/dev/null
	[ -n "$MDS_PID" ] && { kill -KILL "$MDS_PID" 2>/dev/null; wait "$MDS_PID" 2>/dev/null; }
	if [ "$FAILED" != 0 ]; then
		for f in "$T"/*.log "$T"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -20 "$f"; }; done
	fi
	[ -n "${KILL9_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$MNT" "$T/store" "$T/files" "$T/reclaim"
cc -static -O1 -o "$T/files/lockwriter" "$HERE/lockwriter.c" || missing "a static libc" "apt-get install libc6-dev"
cat > "$T/loligo.conf" <<CONF
[global]
nfs4_lease_time = $LEASE
store_backend = local
store_local_path = $T/store
[mds]
mds_addr = 127.0.0.1
log_file = $T/mds.log
admin_socket = $T/mds.asok
mds_keyring = $T/keyring
[client]
log_file = $T/client.log
admin_socket = $T/client.asok
client_mount_timeout = 10
client_keyring = $T/client.keyring
client_reclaim_dir = $T/reclaim
[nfs]
nfs_gateway_id = kill9
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
nfs_rpcbind = false
CONF
"$CLI" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" 2>/dev/null ||
	{ FAILED=1; echo "FAIL: keyrings"; exit 1; }
"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || { FAILED=1; echo "FAIL: mkfs"; exit 1; }
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
MDS_PID=$!
for _ in $(seq 150); do [ -s "$T/mds.port" ] && break; sleep 0.1; done
[ -s "$T/mds.port" ] || { FAILED=1; echo "FAIL: loligo-mds did not start"; exit 1; }
MDS_PORT=$(cat "$T/mds.port")
NFS_PORT=0
served() { local n; n=$(grep -c "NFS gateway serving" "$T/client.log" 2>/dev/null); echo "${n:-0}"; }
start_fuse() {
	local n0=$(served)
	"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:$MDS_PORT --nfs 127.0.0.1:$NFS_PORT "$MNT" \
		>> "$T/fuse.out" 2>&1 &
	FUSE_PID=$!
	for _ in $(seq 300); do
		if [ "$(served)" -gt "$n0" ] && grep -q " $MNT fuse" /proc/mounts; then
			NFS_PORT=$(grep "NFS gateway serving" "$T/client.log" | tail -1 | sed -n 's/.*(port \([0-9]*\)).*/\1/p')
			return 0
		fi
		kill -0 "$FUSE_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "FAIL: loligo-fuse --nfs did not come up"; tail -5 "$T/fuse.out"
	return 1
}
start_fuse || { FAILED=1; exit 1; }
echo "gateway on 127.0.0.1:$NFS_PORT (lease ${LEASE}s)"
sed -e "s/@DIR@/k9/g" "$HERE/guest-kill9.sh" > "$T/guest.sh"
KCLIENT_OPTS=vers=4.1 KCLIENT_FILES=$T/files KCLIENT_TIMEOUT=$KCLIENT_TIMEOUT \
	"$KCLIENT" "$NFS_PORT" "$T/guest.sh" > "$T/guest.out" 2>&1 &
GPID=$!
killed=0
for _ in $(seq $((KCLIENT_TIMEOUT * 20))); do
	if [ "$(cat "$MNT/kill9-request-k9" 2>/dev/null)" = kill ]; then
		t0=$(date +%s.%N)
		kill -KILL "$FUSE_PID"
		wait "$FUSE_PID" 2>/dev/null
		fusermount3 -uz "$MNT"
		start_fuse || { FAILED=1; break; }
		t1=$(date +%s.%N)
		echo restarted > "$MNT/kill9-request-k9"
		killed=1
		break
	fi
	kill -0 $GPID 2>/dev/null || break
	sleep 0.05
done
wait $GPID
rc=$?
GPID=
grep "^KILL9\|GUEST" "$T/guest.out"
[ $killed = 1 ] || { echo "FAIL: the guest never asked for the kill"; FAILED=1; }
[ $killed = 1 ] && printf 'gateway down (kill -9 to the new one serving): %.0f ms\n' "$(echo "($t1 - $t0) * 1000" | bc)"
grep -h "nfs4 recovery" "$T/client.log" | sed 's/^[^ ]* [^ ]* [^ ]* //' | tail -4
stall=$(sed -n 's/.*longest_stall_ms=\([0-9]*\).*/\1/p' "$T/guest.out")
if [ $rc = 0 ] && grep -q "KILL9 OK" "$T/guest.out" && [ -n "$stall" ] && [ "$stall" -lt $(( (LEASE + 5) * 1000 )) ]; then
	echo "PASS: lock reclaimed, never granted meanwhile, writes resumed after a ${stall} ms stall (bound $((LEASE + 5)) s)"
	exit 0
fi
echo "FAIL: rc=$rc"; tail -20 "$T/guest.out"; FAILED=1
exit 1
