#!/usr/bin/env bash
# valgrind_shutdown.sh BUILD_DIR - the daemons' shutdown paths under valgrind.
#
# loligo-mds (temporary local store, ephemeral port) and loligo-fuse -f with
# the embedded NFS gateway both run under memcheck.  Namespace and data work
# goes through the FUSE mount, NFS traffic through the gateway (nfs_badinput,
# and a second of OPEN/CLOSE from nfs_seqid_bench in 4.1 and 4.0, when they
# are built).  Then the mount is unmounted (loligo-fuse leaves its loop and
# tears down the gateway and the client); a second loligo-fuse gets SIGTERM
# while a file on its mount is still open, a third (--no-mount, gateway
# only) serves some NFS traffic, then loligo-mds gets SIGTERM with that
# client's session still open, and last that loligo-fuse SIGTERM.  Each
# daemon must exit 0: memory errors or definite/indirect leaks make valgrind
# exit 99.  Exits 77 (skipped) without valgrind, root or /dev/fuse.
# VG_KEEP=1 keeps the temporary directory (logs, valgrind reports) on failure.
set -u

BUILD=${1:?usage: valgrind_shutdown.sh BUILD_DIR}
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
BADINPUT=$BUILD/tests/nfs_badinput
SEQID=$BUILD/tools/bench/nfs_seqid_bench

skip() { echo "SKIP: $*"; exit 77; }
command -v valgrind >/dev/null || skip "no valgrind"
[ "$(id -u)" = 0 ] || skip "not root"
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -x "$MDS" ] && [ -x "$FUSE" ] || skip "loligo-mds / loligo-fuse not built in $BUILD"
# valgrind cannot run AddressSanitizer binaries
if grep -q __asan_init "$MDS" 2>/dev/null; then skip "sanitizer build"; fi

T=$(mktemp -d /tmp/loligo-vg.XXXXXX)
MNT=$T/mnt
MDS_PID=
FUSE_PID=
FAILED=0
VG=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99
    --num-callers=30 --trace-children=no)

cleanup() {
	if [ -n "$FUSE_PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null
		kill -TERM "$FUSE_PID" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$FUSE_PID" 2>/dev/null
		wait "$FUSE_PID" 2>/dev/null
	fi
	grep -q " $MNT fuse" /proc/mounts && { fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"; }
	if [ -n "$MDS_PID" ]; then kill -KILL "$MDS_PID" 2>/dev/null; wait "$MDS_PID" 2>/dev/null; fi
	if [ "$FAILED" != 0 ]; then
		for f in "$T"/*.log "$T"/*.out; do [ -s "$f" ] && { echo "---- $f"; tail -60 "$f"; }; done
	fi
	if [ "$FAILED" != 0 ] && [ -n "${VG_KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; FAILED=1; exit 1; }

mkdir -p "$MNT" "$T/store"
cat > "$T/loligo.conf" <<CONF
[global]
store_backend = local
store_local_path = $T/store
# valgrind cannot map the default 64G LMDB map
store_local_map_size = 1G
nfs4_grace_time = 1
# the gateway's defaults are knfsd's (ro, root_squash, secure); this test
# writes as root from unprivileged ports
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
nfs_rpcbind = false
[mds]
mds_addr = 127.0.0.1
log_file = $T/mds-daemon.log
admin_socket = $T/mds.asok
mds_keyring = $T/keyring
[client]
log_file = $T/client-daemon.log
admin_socket = $T/client.asok
client_mount_timeout = 60
client_keyring = $T/client.keyring
CONF
"$BUILD/tools/cli/loligo" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" 2>/dev/null ||
	fail "cannot make the keyrings with $BUILD/tools/cli/loligo"

"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || fail "mkfs"

# ---- loligo-mds under valgrind
"${VG[@]}" --log-file="$T/vg-mds.log" "$MDS" -c "$T/loligo.conf" --mds_port=0 \
	--port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
MDS_PID=$!
for _ in $(seq 600); do
	[ -s "$T/mds.port" ] && break
	kill -0 "$MDS_PID" 2>/dev/null || break
	sleep 0.1
done
[ -s "$T/mds.port" ] || fail "loligo-mds did not start under valgrind"
MDS_PORT=$(cat "$T/mds.port")

# start_fuse TAG [--no-mount]: loligo-fuse -f --nfs under valgrind (log vg-TAG.log);
# waits for the mount (unless --no-mount) and the NFS port
start_fuse() {
	local tag=$1 mnt_arg=$MNT up=0
	shift
	[ "${1:-}" = --no-mount ] && mnt_arg=--no-mount
	NFS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"${VG[@]}" --log-file="$T/vg-$tag.log" "$FUSE" -f -c "$T/loligo.conf" \
		--client_mds_addr=127.0.0.1:"$MDS_PORT" --nfs 127.0.0.1:"$NFS_PORT" "$mnt_arg" >> "$T/$tag.out" 2>&1 &
	FUSE_PID=$!
	for _ in $(seq 600); do
		if { [ "$mnt_arg" = --no-mount ] || grep -q " $MNT fuse" /proc/mounts; } &&
			(exec 3<>/dev/tcp/127.0.0.1/"$NFS_PORT") 2>/dev/null; then
			up=1
			break
		fi
		kill -0 "$FUSE_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ "$up" = 1 ] || fail "loligo-fuse ($tag) did not come up under valgrind"
}

# wait_fuse TAG HOW: loligo-fuse must exit 0 within 60 s
wait_fuse() {
	local rc
	for _ in $(seq 600); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$FUSE_PID" 2>/dev/null && fail "loligo-fuse ($1) did not exit after $2"
	wait "$FUSE_PID"
	rc=$?
	FUSE_PID=
	[ "$rc" = 0 ] || fail "loligo-fuse ($1) exited $rc after $2 (99: memory errors or leaks, see vg-$1.log)"
	return 0
}

# ---- 1. mount + NFS gateway; shut down by unmounting
start_fuse fuse

# ---- namespace and data work through the mount
(
	set -e
	cd "$MNT"
	mkdir -p d1/d2/d3
	for i in 1 2 3 4 5; do echo "file $i" > "d1/f$i"; done
	dd if=/dev/urandom of=d1/big bs=64k count=8 status=none
	cmp d1/big d1/big
	ln d1/f1 d1/f1.link
	ln -s f2 d1/f2.sym
	cat d1/f2.sym > /dev/null
	mv d1/f3 d1/d2/f3.moved
	mv d1/f4 d1/f5                  # rename over an existing file
	truncate -s 100000 d1/f5
	chmod 600 d1/f1
	touch -d '2020-01-01' d1/f1
	stat d1/f1 d1/d2/f3.moved > /dev/null
	ls -laR . > /dev/null
	rm d1/f1 d1/f2.sym
	rm -r d1/d2
	[ "$(cat d1/f1.link)" = "file 1" ]
	rmdir d1/d2 2>/dev/null && exit 1
	exec 3> d1/open-unlinked
	echo data >&3
	rm d1/open-unlinked
	exec 3>&-
	sync
) > "$T/work.out" 2>&1 || fail "namespace work through the mount (see work.out)"

# ---- NFS traffic through the gateway
if [ -x "$BADINPUT" ]; then
	"$BADINPUT" "$NFS_PORT" > "$T/badinput.out" 2>&1 || fail "nfs_badinput"
fi
if [ -x "$SEQID" ]; then
	for minor in 1 0; do
		"$SEQID" --port "$NFS_PORT" --minor $minor --inflight 4 --seconds 1 --tag vg$minor \
			>> "$T/seqid.out" 2>&1 || fail "nfs_seqid_bench --minor $minor"
	done
fi

# unmount: loligo-fuse leaves its loop, stops the gateway and the client
fusermount3 -u "$MNT" || fail "fusermount3 -u"
wait_fuse fuse "the unmount"

# ---- 2. mounted, SIGTERM with a file still open (no RELEASE ever comes for it)
start_fuse fuse-term
exec 4> "$MNT/d1/held-open"
echo "written before SIGTERM" >&4
echo more > "$MNT/d1/closed-just-before"
kill -TERM "$FUSE_PID"
wait_fuse fuse-term "SIGTERM"
exec 4>&-
grep -q " $MNT fuse" /proc/mounts && fusermount3 -uz "$MNT"

# ---- 3. gateway only (--no-mount)
start_fuse nfs-only --no-mount
if [ -x "$BADINPUT" ]; then
	"$BADINPUT" "$NFS_PORT" >> "$T/badinput.out" 2>&1 || fail "nfs_badinput (--no-mount)"
fi

# ---- the MDS: SIGTERM while that client's session is still open (and its
# last requests may still be UNSAFE: the MDS sends their SAFE replies before
# it closes the connections, so the client's unmount below has nothing left
# to wait for)
kill -TERM "$MDS_PID"
for _ in $(seq 600); do kill -0 "$MDS_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$MDS_PID" 2>/dev/null && fail "loligo-mds did not exit on SIGTERM"
wait "$MDS_PID"
rc=$?
MDS_PID=
[ "$rc" = 0 ] || fail "loligo-mds exited $rc under valgrind (99: memory errors or leaks, see vg-mds.log)"

# ---- and the gateway-only loligo-fuse, its MDS gone: SIGTERM
kill -TERM "$FUSE_PID"
wait_fuse nfs-only "SIGTERM (after its MDS stopped)"

echo "PASS: loligo-mds (SIGTERM, a session open) and loligo-fuse (unmount; SIGTERM with an open file; --no-mount --nfs SIGTERM after its MDS stopped) shut down clean under valgrind"
exit 0
