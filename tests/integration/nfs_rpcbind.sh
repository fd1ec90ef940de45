#!/usr/bin/env bash
# nfs_rpcbind.sh BUILD_DIR - the gateway and rpcbind (issue 12.3).
#
# Runs in a private mount and network namespace of its own (unshare), so a
# real rpcbind can own port 111 and /run/rpcbind.sock there without
# touching the host's: Debian's rpcbind (and libwrap0, which it needs) are
# fetched with `apt-get download` and unpacked with `dpkg -x` into a cache
# dir, never installed, as the kclient script does with its kernel.  In the
# namespace:
#   1. no rpcbind runs: the gateway says so in one log line, with the
#      mount options that work without it, and serves;
#   2. rpcbind runs: the gateway registers NFS 3 and 4 and MOUNT 3 on its
#      port (rpcinfo -p lists them), a client finds MOUNT through rpcbind
#      (rpcinfo -t, which asks rpcbind for the port and calls NULL), and at
#      its stop it unregisters them.
# Exit: 0 pass, 1 fail (a missing prerequisite too, with what to install).
set -u
BUILD=${1:?usage: nfs_rpcbind.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
CACHE=${RPCBIND_CACHE:-/tmp/loligo-rpcbind-cache}
fail() { echo "FAIL: $*"; exit 1; }

if [ "${NFS_RPCBIND_INNER:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || fail "run as root (it makes a mount and network namespace)"
	command -v unshare > /dev/null || fail "unshare missing (apt-get install util-linux)"
	command -v ip > /dev/null || fail "ip missing (apt-get install iproute2)"
	[ -x "$MDS" ] && [ -x "$FUSE" ] && [ -x "$BUILD/tools/cli/loligo" ] ||
		fail "ninja -C $BUILD loligo-mds loligo-fuse loligo"
	mkdir -p "$CACHE"
	exec 9> "$CACHE/.lock"
	flock 9
	if [ ! -x "$CACHE/root/sbin/rpcbind" ]; then
		rm -rf "$CACHE/dl" "$CACHE/root"
		mkdir -p "$CACHE/dl"
		(cd "$CACHE/dl" && apt-get download rpcbind libwrap0 > "$CACHE/dl.log" 2>&1) ||
			{ cat "$CACHE/dl.log"; fail "apt-get download rpcbind libwrap0 failed (Debian's archive unreachable?)"; }
		for d in "$CACHE"/dl/*.deb; do dpkg -x "$d" "$CACHE/root" || fail "dpkg -x $d"; done
	fi
	flock -u 9
	# Debian's rpcbind drops to the user _rpc: give it one inside the namespace
	grep -v '^_rpc:' /etc/passwd > "$CACHE/passwd.$$"
	echo '_rpc:x:0:0:rpcbind in a test namespace:/run/rpcbind:/usr/sbin/nologin' >> "$CACHE/passwd.$$"
	NFS_RPCBIND_INNER=1 RPCBIND_PASSWD=$CACHE/passwd.$$ unshare --mount --net --fork "$0" "$BUILD"
	rc=$?
	rm -f "$CACHE/passwd.$$"
	exit $rc
fi

# ---- inside the namespace: nothing here is seen by the host ----------------
mount -t tmpfs tmpfs /run || fail "tmpfs on /run"
mount --bind "$RPCBIND_PASSWD" /etc/passwd || fail "bind /etc/passwd"
ip link set lo up || fail "lo up"
export LD_LIBRARY_PATH=$CACHE/root/usr/lib/x86_64-linux-gnu:$CACHE/root/lib/x86_64-linux-gnu
RPCBIND=$CACHE/root/sbin/rpcbind
RPCINFO=$CACHE/root/usr/sbin/rpcinfo
T=$(mktemp -d /tmp/loligo-rpcbind.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	[ "${FAILED:-0}" = 1 ] && for f in "$T"/*.log; do echo "---- $f"; tail -20 "$f"; done
	rm -rf "$T"
}
trap cleanup EXIT
FAILED=1

cat > "$T/loligo.conf" <<CONF
[global]
store_backend = local
store_local_path = $T/store
nfs4_grace_time = 0
[mds]
mds_addr = 127.0.0.1
log_file = $T/mds.log
mds_keyring = $T/keyring
[client]
log_file = $T/client.log
client_mount_timeout = 10
client_keyring = $T/client.keyring
[nfs]
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
nfs_rpcbind = true
CONF
mkdir -p "$T/store"
"$BUILD/tools/cli/loligo" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" \
	> "$T/auth.log" 2>&1 || fail "cannot make the keyrings with $BUILD/tools/cli/loligo"
"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.log" 2>&1 || fail "mkfs"
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/mds.port" ] && break; sleep 0.1; done
[ -s "$T/mds.port" ] || fail "loligo-mds did not start"

# start_gw: the gateway on an ephemeral port; sets GW (pid) and PORT
start_gw() {
	local n0 n
	n0=$(cat "$T/client.log" 2>/dev/null | grep -c "NFS gateway serving")
	"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:"$(cat "$T/mds.port")" --no-mount \
		--nfs 127.0.0.1:0 > "$T/fuse.out.log" 2>&1 &
	GW=$!
	PIDS+=($GW)
	for _ in $(seq 100); do
		n=$(cat "$T/client.log" 2>/dev/null | grep -c "NFS gateway serving")
		[ "$n" -gt "$n0" ] && break
		kill -0 "$GW" 2>/dev/null || fail "loligo-fuse --nfs exited"
		sleep 0.1
	done
	PORT=$(grep "NFS gateway serving" "$T/client.log" | tail -1 | sed -n 's/.*(port \([0-9]*\)).*/\1/p')
	[ -n "$PORT" ] || fail "the gateway did not start"
}
stop_gw() {
	kill -TERM "$GW"
	for _ in $(seq 100); do kill -0 "$GW" 2>/dev/null || return 0; sleep 0.1; done
	fail "the gateway did not stop"
}

# 1. no rpcbind: one clear line, and it serves
start_gw
grep -q "no rpcbind runs on this host: NFS and MOUNT are not registered; clients mount with port=$PORT,mountport=$PORT,mountproto=tcp" \
	"$T/client.log" || fail "no log line saying there is no rpcbind"
(exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null || fail "the gateway does not serve without rpcbind"
echo "PASS: without rpcbind the gateway says how to mount, and serves"
stop_gw

# 2. rpcbind runs: registered, found, unregistered
"$RPCBIND" -f > "$T/rpcbind.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do "$RPCINFO" -p 127.0.0.1 > /dev/null 2>&1 && break; sleep 0.1; done
"$RPCINFO" -p 127.0.0.1 > /dev/null 2>&1 || fail "rpcbind did not start (see rpcbind.log)"
start_gw
"$RPCINFO" -p 127.0.0.1 > "$T/rpcinfo.log" 2>&1
for pv in "100003 3" "100003 4" "100005 3"; do
	grep -Eq "^ *${pv% *} +${pv#* } +tcp +$PORT( |$)" "$T/rpcinfo.log" ||
		fail "program ${pv% *} version ${pv#* } not registered on tcp port $PORT: $(cat "$T/rpcinfo.log")"
done
grep -q "registered 3 program versions with rpcbind (port $PORT)" "$T/client.log" || fail "no registration log line"
"$RPCINFO" -t 127.0.0.1 100005 3 > "$T/mountnull.log" 2>&1 ||
	fail "MOUNT v3 not reachable through rpcbind: $(cat "$T/mountnull.log")"
"$RPCINFO" -t 127.0.0.1 100003 3 > "$T/nfsnull.log" 2>&1 ||
	fail "NFS v3 not reachable through rpcbind: $(cat "$T/nfsnull.log")"
echo "PASS: registered with rpcbind; NFS and MOUNT found through it"
stop_gw
"$RPCINFO" -p 127.0.0.1 > "$T/rpcinfo2.log" 2>&1
if grep -Eq "^ *10000[35] " "$T/rpcinfo2.log"; then fail "still registered after the stop: $(cat "$T/rpcinfo2.log")"; fi
echo "PASS: unregistered at the stop"
FAILED=0
echo "ALL PASSED"
