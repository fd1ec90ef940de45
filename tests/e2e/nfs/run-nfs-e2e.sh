#!/usr/bin/env bash
# run-nfs-e2e.sh - NFS gateway end-to-end tests with the Linux kernel client.
#
#   run-nfs-e2e.sh BUILD_DIR [VERS...]        (default VERS: 4.1 4.0)
#
# Starts a real loligo-mds and a real loligo-fuse (FUSE mount + the embedded
# NFS gateway on an ephemeral 127.0.0.1 port) on a temp dir, then for each
# NFS version boots the kernel client (../shared/kclient) and runs
# nfs_badinput (bad handles, stale stateids, unknown ops, garbage: the RFC's
# errors, and the gateway keeps serving), then guest-basic.sh
# (create/write/read/rename/remove, 32 MiB md5, 2000
# entries, symlinks, hard links, chmod/chown, fcntl and flock locks, files
# crossing between the FUSE mount and the export) and guest-restart.sh (the
# gateway process restarted while the guest keeps the export mounted and a
# file open), and guest-pseudo.sh (two exports below the root: the pseudo
# fs, a ro and a rw export).  Everything it started is killed and unmounted on exit, also
# on failure.  Exit: 0 pass, 1 fail, 77 skipped (no root, /dev/fuse, qemu
# helper or static libc).
set -u
BUILD=${1:?usage: run-nfs-e2e.sh BUILD_DIR [VERS...]}
shift
VERSIONS=${*:-4.1 4.0}
HERE=$(cd "$(dirname "$0")" && pwd)
KCLIENT=${KCLIENT_SCRIPT:-$HERE/../../../../shared/kclient/run-kernel-client.sh}
[ -x "$KCLIENT" ] || KCLIENT=/work/shared/kclient/run-kernel-client.sh
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (FUSE mount, qemu)"
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -x "$KCLIENT" ] || skip "no kernel client helper at $KCLIENT"
[ -x "$MDS" ] && [ -x "$FUSE" ] || skip "loligo-mds / loligo-fuse not built in $BUILD"

T=$(mktemp -d /tmp/loligo-nfs-e2e.XXXXXX)
MNT=$T/mnt
FUSE_PID=
MDS_PID=
FAILED=0
EXTRA_OPTS=()

cleanup() {
	if [ -n "$FUSE_PID" ]; then kill -TERM "$FUSE_PID" 2>/dev/null; fi
	for _ in $(seq 50); do [ -n "$FUSE_PID" ] && kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
	if [ -n "$FUSE_PID" ]; then kill -KILL "$FUSE_PID" 2>/dev/null; fi
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	if [ -n "$MDS_PID" ]; then kill -KILL "$MDS_PID" 2>/dev/null; wait "$MDS_PID" 2>/dev/null; fi
	if [ "$FAILED" != 0 ]; then
		for f in "$T"/*.log "$T"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -20 "$f"; }; done
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$MNT" "$T/store" "$T/files"
cc -static -O1 -o "$T/files/locktest" "$HERE/locktest.c" 2>"$T/cc.out" || skip "cannot build a static test binary (libc.a?)"
cc -static -O1 -o "$T/files/runas" "$HERE/runas.c" 2>>"$T/cc.out" || skip "cannot build a static test binary (libc.a?)"

cat > "$T/loligo.conf" <<CONF
[global]
nfs4_grace_time = 2
store_backend = local
store_local_path = $T/store
[mds]
mds_addr = 127.0.0.1
log_file = $T/mds.log
admin_socket = $T/mds.asok
[client]
log_file = $T/client.log
admin_socket = $T/client.asok
client_mount_timeout = 10
CONF

"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || { FAILED=1; echo "FAIL: mkfs"; exit 1; }
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
MDS_PID=$!
for _ in $(seq 150); do [ -s "$T/mds.port" ] && break; sleep 0.1; done
[ -s "$T/mds.port" ] || { FAILED=1; echo "FAIL: loligo-mds did not start"; exit 1; }
MDS_PORT=$(cat "$T/mds.port")
NFS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

start_fuse() {
	"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:$MDS_PORT --nfs 127.0.0.1:$NFS_PORT \
		"${EXTRA_OPTS[@]}" "$MNT" >> "$T/fuse.out" 2>&1 &
	FUSE_PID=$!
	for _ in $(seq 100); do
		if grep -q " $MNT fuse" /proc/mounts && (exec 3<>/dev/tcp/127.0.0.1/$NFS_PORT) 2>/dev/null; then
			return 0
		fi
		kill -0 "$FUSE_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL: loligo-fuse --nfs did not come up"
	return 1
}

stop_fuse() {
	kill -TERM "$FUSE_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$FUSE_PID" 2>/dev/null
	wait "$FUSE_PID" 2>/dev/null
	FUSE_PID=
	grep -q " $MNT fuse" /proc/mounts && { fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"; }
	return 0
}

start_fuse || { FAILED=1; exit 1; }
echo "written through fuse" > "$MNT/from-fuse.txt"

# bad input over real sockets (bad handles, stale stateids, unknown ops, garbage)
if [ -x "$BUILD/tests/nfs_badinput" ]; then
	if "$BUILD/tests/nfs_badinput" "$NFS_PORT" > "$T/badinput.out" 2>&1; then
		echo "PASS: bad input"
	else
		echo "FAIL: bad input"; cat "$T/badinput.out"; FAILED=1
	fi
fi

guest() {  # guest NAME VERS SCRIPT DIR
	local name=$1 vers=$2 script=$3 dir=$4 rc
	sed "s/@DIR@/$dir/g" "$HERE/$script" > "$T/$name.sh"
	KCLIENT_OPTS=vers=$vers KCLIENT_FILES=$T/files KCLIENT_TIMEOUT=${KCLIENT_TIMEOUT:-240} \
		"$KCLIENT" "$NFS_PORT" "$T/$name.sh" > "$T/$name.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q "GUEST OK" "$T/$name.out"; then
		echo "PASS: $name (vers=$vers)"
		return 0
	fi
	echo "FAIL: $name (vers=$vers) rc=$rc"
	tail -15 "$T/$name.out"
	FAILED=1
	return 1
}

for v in $VERSIONS; do
	d=v${v/./}
	if guest "basic-$d" "$v" guest-basic.sh "$d"; then
		if [ "$(cat "$MNT/$d/from-nfs.txt" 2>/dev/null)" = "written through nfs" ]; then
			echo "PASS: $d/from-nfs.txt seen through the FUSE mount"
		else
			echo "FAIL: $d/from-nfs.txt not seen through the FUSE mount"
			FAILED=1
		fi
		[ "$(ls "$MNT/$d/many" | wc -l)" = 2000 ] || { echo "FAIL: FUSE sees $(ls "$MNT/$d/many" | wc -l) of 2000 entries"; FAILED=1; }
	fi

	# the restart: the driver watches for the guest's request through FUSE
	rd=restart$d
	guest "restart-$d" "$v" guest-restart.sh "$rd" &
	GPID=$!
	restarted=0
	for _ in $(seq 1200); do
		if [ -e "$MNT/restart-request-$rd" ]; then
			stop_fuse
			start_fuse || { FAILED=1; break; }
			rm -f "$MNT/restart-request-$rd"
			restarted=1
			break
		fi
		kill -0 $GPID 2>/dev/null || break
		sleep 0.1
	done
	wait $GPID || FAILED=1
	[ $restarted = 1 ] || { echo "FAIL: the guest never asked for the restart"; FAILED=1; }
done

# exports below the root: the pseudo fs, ro and rw (4.1)
mkdir -p "$MNT/pdata" "$MNT/pro"
echo "read write" > "$MNT/pdata/y"
echo "read only" > "$MNT/pro/x"
stop_fuse
EXTRA_OPTS=("--nfs_exports=path=/pdata,pseudo=/srv/data;path=/pro,pseudo=/srv/ro,ro")
if start_fuse; then
	if guest pseudo 4.1 guest-pseudo.sh unused; then
		[ "$(cat "$MNT/pdata/z" 2>/dev/null)" = new ] || { echo "FAIL: pdata/z not seen through FUSE"; FAILED=1; }
	fi
else
	FAILED=1
fi

if [ "$FAILED" = 0 ]; then echo "ALL PASSED"; exit 0; fi
exit 1
