#!/usr/bin/env bash
# run-nfs-e2e.sh - NFS gateway end-to-end tests with the Linux kernel client.
#
#   run-nfs-e2e.sh BUILD_DIR [VERS...]        (default VERS: 4.1 4.0 3)
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
# fs, a ro and a rw export), and guest-coherency.sh (changes made over NFS
# seen through the FUSE mount at once, and FUSE's on the guest's re-open),
# and guest-reload.sh (the export reloaded read-only and back while the
# guest stays mounted), and guest-locks.sh (NFSv4.1/4.0 only: v3 mounts
# nolock; fcntl locks over NFS conflict both ways with a process on a
# second loligo-fuse mount of the same filesystem, the MDS arbitrating
# between two clients), for each version; then guest-defaults.sh (knfsd's
# defaults: an export that says nothing is ro and root-squashed).  NFSv3
# mounts with port= and mountport= (no rpcbind), nolock, through the
# project's copy of the kclient script (run-kernel-client.sh here), which
# adds the nfsv3 module and a mount(2) helper (mountnfs.c).  Everything it started is killed and unmounted on exit, also
# on failure, and a detached watchdog does the same if the driver itself is
# killed (ctest's timeout SIGKILLs it; its EXIT trap then never runs).
# Exit: 0 pass, 1 fail - also when a prerequisite (root, /dev/fuse,
# fusermount3, qemu, the kclient helper, a static libc, the binaries) is
# missing: the FAIL line says what to install.  Each guest gets
# KCLIENT_TIMEOUT: default 120 s with KVM (a guest takes ~5-15 s), 420 s
# without it (qemu's TCG emulation: a guest took 20-60 s at load ~11, and
# one timed out before mounting at 120 s under more load).  The ctest
# TIMEOUT (tests/e2e/nfs.cmake) is for the whole run, not 16 times this.
# NFSv4 delegations follow NFS_E2E_DELEGATIONS (default false, as
# nfs4_delegations: true turns them on).
set -u
BUILD=${1:?usage: run-nfs-e2e.sh BUILD_DIR [VERS...]}
shift
VERSIONS=${*:-4.1 4.0 3}
HERE=$(cd "$(dirname "$0")" && pwd)
KCLIENT=${KCLIENT_SCRIPT:-$HERE/run-kernel-client.sh}
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
CLI=$BUILD/tools/cli/loligo

BADINPUT=$BUILD/tests/nfs_badinput
# the helper's own choice of accelerator (run-kernel-client.sh): KVM only if usable
if [ -z "${KCLIENT_TIMEOUT:-}" ]; then
	if [ -w /dev/kvm ] && grep -qE '\b(vmx|svm)\b' /proc/cpuinfo && [ "${KCLIENT_ACCEL:-kvm}" != tcg ]; then
		KCLIENT_TIMEOUT=120
	else
		KCLIENT_TIMEOUT=420
	fi
fi

# a missing prerequisite is a failure, never a silent skip
missing() { echo "FAIL: $1 missing ($2)"; exit 1; }
[ "$(id -u)" = 0 ] || missing "root" "run the test as root: it makes a FUSE mount and boots qemu"
[ -e /dev/fuse ] || missing "/dev/fuse" "modprobe fuse; a container needs --device /dev/fuse"
command -v fusermount3 > /dev/null || missing "fusermount3" "apt-get install fuse3"
command -v qemu-system-x86_64 > /dev/null || missing "qemu-system-x86_64" "apt-get install qemu-system-x86 busybox-static"
command -v cc > /dev/null || missing "cc" "apt-get install gcc libc6-dev"
[ -x "$KCLIENT" ] || missing "the kernel client helper $KCLIENT" "tests/e2e/nfs/run-kernel-client.sh, or set KCLIENT_SCRIPT"
[ -x "$CLI" ] || missing "$CLI" "ninja -C $BUILD loligo"
[ -x "$MDS" ] || missing "$MDS" "ninja -C $BUILD loligo-mds"
[ -x "$FUSE" ] || missing "$FUSE" "ninja -C $BUILD loligo-fuse"
[ -x "$BADINPUT" ] || missing "$BADINPUT" "ninja -C $BUILD nfs_badinput"
[ -x "$BUILD/tools/cli/loligo" ] || missing "$BUILD/tools/cli/loligo" "ninja -C $BUILD loligo"

T=$(mktemp -d /tmp/loligo-nfs-e2e.XXXXXX)
MNT=$T/mnt
MNT2=$T/mnt2    # a second loligo-fuse mount (own MDS session, no gateway): the locks' other client
FUSE_PID=
FUSE2_PID=
MDS_PID=
FAILED=0
EXTRA_OPTS=()

# pid $1 and every descendant of it, deepest first (qemu is a kclient
# helper's grandchild, under `timeout`)
ptree() {
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do ptree "$c"; done
	echo "$1"
}
# The kclient helpers still running (a TERM or INT while a guest runs) and
# everything under them: TERM, then KILL after 5 s.  Before $T goes: the
# watchdog below does nothing once it is gone.
stop_guests() {
	local p all="" alive
	for p in $(cat "$T/pids" 2>/dev/null); do
		grep -qa run-kernel-client "/proc/$p/cmdline" 2>/dev/null && all="$all $(ptree "$p" | tr "\n" " ")"
	done
	[ -n "$all" ] || return 0
	echo "stopping the guests still running (pids$all)"
	kill -TERM $all 2>/dev/null
	for _ in $(seq 50); do
		alive=0
		for p in $all; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.1
	done
	kill -KILL $all 2>/dev/null
	return 0
}

cleanup() {
	stop_guests
	if [ -n "$FUSE_PID" ]; then kill -TERM "$FUSE_PID" 2>/dev/null; fi
	for _ in $(seq 50); do [ -n "$FUSE_PID" ] && kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
	if [ -n "$FUSE_PID" ]; then kill -KILL "$FUSE_PID" 2>/dev/null; fi
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	stop_fuse2
	if [ -n "$MDS_PID" ]; then kill -KILL "$MDS_PID" 2>/dev/null; wait "$MDS_PID" 2>/dev/null; fi
	if [ "$FAILED" != 0 ]; then
		for f in "$T"/*.log "$T"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -20 "$f"; }; done
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# Every process started (daemons, kclient helpers) is listed in $T/pids.  If
# the driver dies without its EXIT trap (SIGKILL on a ctest timeout), this
# detached watchdog stops them (a kclient helper's children first: its
# `timeout` passes the TERM on to qemu), lazily unmounts and removes $T.
setsid bash -c 'while kill -0 '"$$"' 2>/dev/null; do sleep 1; done
	[ -d "'"$T"'" ] || exit 0
	pids=$(cat "'"$T"'/pids" 2>/dev/null)
	ours() { grep -qaE "loligo|run-kernel-client" /proc/$1/cmdline 2>/dev/null; }
	for p in $pids; do
		ours $p || continue
		for c in $(ps -o pid= --ppid $p 2>/dev/null); do kill -TERM $c 2>/dev/null; done
		kill -TERM $p 2>/dev/null
	done
	sleep 3
	for p in $pids; do ours $p && kill -KILL $p 2>/dev/null; done
	fusermount3 -uz "'"$MNT"'" 2>/dev/null
	fusermount3 -uz "'"$MNT2"'" 2>/dev/null
	rm -rf "'"$T"'"' < /dev/null > /dev/null 2>&1 &

mkdir -p "$MNT" "$MNT2" "$T/store" "$T/files"
for b in locktest runas mountnfs heldopen opstorm; do
	cc -static -O1 -pthread -o "$T/files/$b" "$HERE/$b.c" 2>> "$T/cc.out" ||
		{ cat "$T/cc.out"; missing "a static libc (libc.a)" "apt-get install libc6-dev"; }
done

cat > "$T/loligo.conf" <<CONF
[global]
nfs4_grace_time = 2
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
[nfs]
# the guest's privileged ports arrive through qemu's NAT as ports >= 1024
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
# the guest mounts v3 with port= and mountport=: leave the host's rpcbind alone
nfs_rpcbind = false
nfs4_delegations = ${NFS_E2E_DELEGATIONS:-false}
CONF
"$BUILD/tools/cli/loligo" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" 2>/dev/null ||
	{ FAILED=1; echo "FAIL: cannot make the keyrings with $BUILD/tools/cli/loligo"; exit 1; }

"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || { FAILED=1; echo "FAIL: mkfs"; exit 1; }
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
MDS_PID=$!
echo $MDS_PID >> "$T/pids"
for _ in $(seq 150); do [ -s "$T/mds.port" ] && break; sleep 0.1; done
[ -s "$T/mds.port" ] || { FAILED=1; echo "FAIL: loligo-mds did not start"; exit 1; }
MDS_PORT=$(cat "$T/mds.port")
NFS_PORT=0

served() { cat "$T/client.log" 2>/dev/null | grep -c "NFS gateway serving"; }

# start_fuse: loligo-fuse with the gateway on 127.0.0.1:$NFS_PORT; port 0
# lets the gateway bind an ephemeral port, read back from its log line
# "NFS gateway serving ... (port N)" into NFS_PORT.  A restart asks for the
# same port again (the guest stays mounted on it): if that bind fails (taken
# meanwhile, or still held), it is retried a few times.
start_fuse() {
	local n0 try
	for try in 1 2 3 4 5; do
		n0=$(served)
		"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:$MDS_PORT --nfs 127.0.0.1:$NFS_PORT \
			"${EXTRA_OPTS[@]}" "$MNT" >> "$T/fuse.out" 2>&1 &
		FUSE_PID=$!
		echo $FUSE_PID >> "$T/pids"
		for _ in $(seq 150); do
			if [ "$(served)" -gt "$n0" ] && grep -q " $MNT fuse" /proc/mounts; then
				NFS_PORT=$(grep "NFS gateway serving" "$T/client.log" | tail -1 | sed -n 's/.*(port \([0-9]*\)).*/\1/p')
				[ -n "$NFS_PORT" ] && [ "$NFS_PORT" != 0 ] && return 0
				echo "FAIL: no port in the gateway's log line"
				return 1
			fi
			kill -0 "$FUSE_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop_fuse
		echo "loligo-fuse --nfs 127.0.0.1:$NFS_PORT did not come up (try $try)"
		sleep 1
	done
	echo "FAIL: loligo-fuse --nfs did not come up"
	tail -5 "$T/fuse.out"
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

# the second mount: no --nfs, its own admin socket and log
start_fuse2() {
	"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:$MDS_PORT --admin_socket="$T/client2.asok" \
		--log_file="$T/client2.log" "$MNT2" >> "$T/fuse2.out" 2>&1 &
	FUSE2_PID=$!
	echo $FUSE2_PID >> "$T/pids"
	for _ in $(seq 150); do
		grep -q " $MNT2 fuse" /proc/mounts && return 0
		kill -0 "$FUSE2_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL: the second loligo-fuse mount did not come up"
	tail -5 "$T/fuse2.out"
	return 1
}
stop_fuse2() {
	[ -n "$FUSE2_PID" ] || return 0
	kill -TERM "$FUSE2_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$FUSE2_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$FUSE2_PID" 2>/dev/null
	wait "$FUSE2_PID" 2>/dev/null
	FUSE2_PID=
	grep -q " $MNT2 fuse" /proc/mounts && { fusermount3 -u "$MNT2" 2>/dev/null || fusermount3 -uz "$MNT2"; }
	return 0
}

start_fuse || { FAILED=1; exit 1; }
start_fuse2 || { FAILED=1; exit 1; }
echo "written through fuse" > "$MNT/from-fuse.txt"

# bad input over real sockets (bad handles, stale stateids, unknown ops, garbage)
if "$BADINPUT" "$NFS_PORT" > "$T/badinput.out" 2>&1; then
	echo "PASS: bad input"
else
	echo "FAIL: bad input"; cat "$T/badinput.out"; FAILED=1
fi

guest() {  # guest NAME VERS SCRIPT DIR
	local name=$1 vers=$2 script=$3 dir=$4 rc
	sed -e "s/@DIR@/$dir/g" -e "s/@VERS@/$vers/g" "$HERE/$script" > "$T/$name.sh"
	KCLIENT_OPTS=vers=$vers KCLIENT_FILES=$T/files KCLIENT_TIMEOUT=$KCLIENT_TIMEOUT \
		"$KCLIENT" "$NFS_PORT" "$T/$name.sh" > "$T/$name.out" 2>&1 &
	echo $! >> "$T/pids"
	wait $!
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

# coherency: the FUSE mount and the gateway in one process share one client;
# a change made through the gateway must drop what the kernel caches for the
# FUSE mount (attributes, names, pages: kept up to client_caps_timeout, 10 s,
# otherwise) at once.  The driver reads, stats and lists everything through
# FUSE, the guest changes it over NFS, and right after the guest reports
# done FUSE must show the new state (within COH_WAIT s, well below 10 s).
COH_WAIT=${COH_WAIT:-1}
wait_out() {  # wait_out FILE LINE PID: until the guest printed LINE (or its KCLIENT_TIMEOUT)
	for _ in $(seq $((KCLIENT_TIMEOUT * 10))); do
		grep -q "^$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
coh_check() {  # the state after the guest's changes, or what differs
	local x=$1 g bad=0
	g="grown: a longer content than before"
	[ "$(cat $x/same.txt)" = new-new-new ] || { echo "same.txt reads '$(cat $x/same.txt)'"; bad=1; }
	[ "$(stat -c %s:%a $x/same.txt)" = 12:600 ] || { echo "same.txt size:mode $(stat -c %s:%a $x/same.txt)"; bad=1; }
	[ "$(stat -c %s $x/grow.txt)" = $((${#g} + 1)) ] || { echo "grow.txt size $(stat -c %s $x/grow.txt)"; bad=1; }
	[ "$(cat $x/grow.txt)" = "$g" ] || { echo "grow.txt reads '$(cat $x/grow.txt)'"; bad=1; }
	[ "$(stat -c %s $x/shrink.txt)" = 2 ] || { echo "shrink.txt size $(stat -c %s $x/shrink.txt)"; bad=1; }
	[ "$(cat $x/shrink.txt)" = x ] || { echo "shrink.txt reads '$(cat $x/shrink.txt)'"; bad=1; }
	[ "$(cat $x/app.txt | tr '\n' ' ')" = "first appended " ] || { echo "app.txt reads '$(cat $x/app.txt)'"; bad=1; }
	[ "$(stat -c %h $x/app.txt)" = 2 ] || { echo "app.txt nlink $(stat -c %h $x/app.txt)"; bad=1; }
	[ -e $x/new.txt ] || { echo "new.txt missing"; bad=1; }
	[ ! -e $x/gone.txt ] || { echo "gone.txt still there"; bad=1; }
	[ ! -e $x/ren-a.txt ] || { echo "ren-a.txt still there"; bad=1; }
	[ "$(cat $x/ren-b.txt 2>/dev/null)" = renamed ] || { echo "ren-b.txt missing"; bad=1; }
	[ -d $x/newdir ] || { echo "newdir missing"; bad=1; }
	[ "$(readlink $x/new.lnk)" = same.txt ] || { echo "new.lnk missing"; bad=1; }
	[ "$(LC_ALL=C ls $x | tr '\n' ' ')" = "app-link.txt app.txt back.txt grow.txt new.lnk new.txt newdir ren-b.txt req same.txt shrink.txt " ] ||
		{ echo "listing: $(LC_ALL=C ls $x | tr '\n' ' ')"; bad=1; }
	return $bad
}
# the 4.1 back channel the Linux client asks for at mount (CREATE_SESSION
# with CONN_BACK_CHAN): probed up (so SEQUENCE reports no CB_PATH_DOWN), and
# a CB_COMPOUND { CB_SEQUENCE } sent on it now is answered by the guest kernel
back_channel_check() {
	local out="" id cb i
	for i in $(seq 100); do
		out=$("$CLI" -f json --timeout 20 daemon "$T/client.asok" nfs clients 2>/dev/null | tr -d ' \n')
		echo "$out" | grep -q '"back_channel":"up"' && break
		sleep 0.1
	done
	if ! echo "$out" | grep -q '"back_channel":"up"'; then
		echo "FAIL: 4.1 back channel not up: $out"; FAILED=1; return 1
	fi
	id=$(echo "$out" | grep -o '"clientid":[0-9]*' | head -1 | cut -d: -f2)
	cb=$("$CLI" -f json --timeout 30 daemon "$T/client.asok" nfs client callback "id=$id" 2>&1 | tr -d ' \n')
	if echo "$cb" | grep -q '"result":0' && echo "$cb" | grep -q '"status":0'; then
		echo "PASS: 4.1 back channel up (no CB_PATH_DOWN); the guest answered CB_SEQUENCE"
	else
		echo "FAIL: 4.1 callback to the guest: $cb"; FAILED=1
	fi
}

coherency() {  # coherency VERS DIR
	local v=$1 d=$2 x=$MNT/$2 gpid t0 ms why ok=0
	mkdir "$x" && echo old-old-old > "$x/same.txt" && echo short > "$x/grow.txt" &&
		echo "a rather long old content" > "$x/shrink.txt" && echo first > "$x/app.txt" &&
		echo bye > "$x/gone.txt" && echo renamed > "$x/ren-a.txt" && echo "fuse v1" > "$x/back.txt" &&
		echo wait > "$x/req" || { echo "FAIL: coherency set-up through FUSE"; FAILED=1; return 1; }
	guest "coh-$d" "$v" guest-coherency.sh "$d" &
	gpid=$!
	if wait_out "$T/coh-$d.out" "COH READY" $gpid; then
		[ "$v" = 4.1 ] && back_channel_check
		# let the kernel cache it all: pages, attributes, names (also missing ones)
		cat "$x"/*.txt > /dev/null; stat "$x"/* > /dev/null; ls -l "$x" > /dev/null
		for n in new.txt newdir new.lnk ren-b.txt app-link.txt; do [ -e "$x/$n" ]; done
		coh_check "$x" > /dev/null && echo "note: coherency check passes before the guest's changes?"
		echo go > "$x/req"
		if wait_out "$T/coh-$d.out" "COH DONE" $gpid; then
			# the guest holds held.txt open (NFSv4: v3 has no opens): remove it under its feet
			[ "$v" = 3 ] || rm "$x/held.txt" || { echo "FAIL: coherency $d: rm held.txt through FUSE"; FAILED=1; }
			t0=$(date +%s%N)
			local tries=0 first=""
			while :; do
				tries=$((tries + 1))
				why=$(coh_check "$x") && { ok=1; break; }
				[ -n "$first" ] || first="$(echo "$why" | paste -sd ";" -) (at $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
				[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt $((COH_WAIT * 1000)) ] || break
				sleep 0.05
			done
			ms=$(( ($(date +%s%N) - t0) / 1000000 ))
			if [ $ok = 1 ]; then
				echo "PASS: coherency $d: NFS changes seen through FUSE after ${ms} ms ($tries checks${first:+; the first saw: $first})"
			else
				echo "FAIL: coherency $d: after ${ms} ms FUSE still shows: $(echo "$why" | paste -sd ";" -)"
				FAILED=1
			fi
			printf 'fuse v2, longer than v1\n' > "$x/back.txt"
			echo go2 > "$x/req"
		fi
	fi
	wait $gpid || FAILED=1
	rm -rf "$x" 2>/dev/null
}

# file locks across clients: a process on the second mount (MNT2, its own MDS
# session) and the guest over NFS (the gateway's session) lock the same range
# of one file; the MDS must refuse each while the other holds it.  (a) the
# host holds, the guest's F_SETLK is refused, the host unlocks, the guest's
# is granted; (b) the guest holds, the host's is refused, the guest unlocks,
# the host's is granted.  Steps are markers (the guest's stdout, req through
# FUSE, files in $T for the host holder), each wait with a deadline.
locks_test() {  # locks_test VERS DIR
	local v=$1 d=$2 x=$MNT2/$2 r=$MNT/$2/req lt=$T/files/locktest gpid hpid= i ok=0
	mkdir "$MNT/$d" && printf 0123456789 > "$MNT/$d/lk" && echo wait > "$r" ||
		{ echo "FAIL: locks set-up through FUSE"; FAILED=1; return 1; }
	rm -f "$T/lk.ready" "$T/lk.release"
	"$lt" hold "$x/lk" 0 5 "$T/lk.ready" "$T/lk.release" > "$T/lk-host-$d.out" 2>&1 &
	hpid=$!
	for i in $(seq 300); do
		[ -e "$T/lk.ready" ] && break
		kill -0 $hpid 2>/dev/null || break
		sleep 0.1
	done
	if ! [ -e "$T/lk.ready" ]; then
		echo "FAIL: locks $d: the host could not lock through the second mount: $(cat "$T/lk-host-$d.out")"
		touch "$T/lk.release"; wait $hpid; FAILED=1; rm -rf "$MNT/$d"; return 1
	fi
	echo host-holds > "$r"
	guest "locks-$d" "$v" guest-locks.sh "$d" &
	gpid=$!
	if wait_out "$T/locks-$d.out" "LOCKS A " $gpid; then
		if grep -q "^LOCKS A BUSY" "$T/locks-$d.out"; then
			echo "PASS: locks $d (a): F_SETLK over NFS refused while a FUSE mount's process holds the range"
		else
			echo "FAIL: locks $d (a): $(grep -m1 "locktest: FAIL" "$T/locks-$d.out")"; FAILED=1
		fi
		touch "$T/lk.release"
		if wait $hpid; then
			hpid=
			echo host-unlocked > "$r"
		else
			hpid=
			echo "FAIL: locks $d: the host holder: $(cat "$T/lk-host-$d.out")"; FAILED=1
		fi
	fi
	if wait_out "$T/locks-$d.out" "LOCKS GUEST GOT IT" $gpid; then
		echo "PASS: locks $d (a): granted over NFS once the FUSE holder unlocked"
	fi
	if wait_out "$T/locks-$d.out" "LOCKS GUEST HOLDS" $gpid; then
		if "$lt" busy "$x/lk" 0 5 >> "$T/lk-host-$d.out" 2>&1; then
			echo "PASS: locks $d (b): F_SETLK through FUSE refused while the guest holds the range over NFS"
			ok=1
		else
			echo "FAIL: locks $d (b): $(tail -1 "$T/lk-host-$d.out")"; FAILED=1
		fi
		echo guest-release > "$r"
		if wait_out "$T/locks-$d.out" "LOCKS GUEST UNLOCKED" $gpid; then
			if "$lt" get "$x/lk" 0 5 >> "$T/lk-host-$d.out" 2>&1; then
				[ $ok = 1 ] && echo "PASS: locks $d (b): granted through FUSE once the guest unlocked"
			else
				echo "FAIL: locks $d (b): $(tail -1 "$T/lk-host-$d.out")"; FAILED=1
			fi
		fi
		echo done > "$r"
	fi
	touch "$T/lk.release"
	[ -z "$hpid" ] || wait $hpid
	wait $gpid || FAILED=1
	rm -rf "$MNT/$d" 2>/dev/null
}

# the gateway's NFSv4.0 seqid waits so far (perf dump of loligo-fuse's admin socket)
seqid_waits() {
	"$BUILD/tools/cli/loligo" -f json daemon "$T/client.asok" perf dump 2>/dev/null |
		tr -d ' \n' | grep -o '"seqid_waits":[0-9]*' | cut -d: -f2
}

for v in $VERSIONS; do
	d=v${v/./}
	coherency "$v" "coh$d"
	if [ "$v" = 3 ]; then
		echo "note: locks across FUSE and NFS not tested for v3 (mounted nolock: no NLM here)"
	else
		locks_test "$v" "locks$d"
	fi
	if [ "$v" = 4.1 ] && [ "${NFS_E2E_DELEGATIONS:-false}" = true ]; then
		# the guest polled req through a read delegation; FUSE's writes of it recalled it
		dg=$("$CLI" -f json daemon "$T/client.asok" perf dump 2>/dev/null | tr -d ' \n' |
			grep -o '"delegations_[a-z]*":[0-9]*' | tr '\n' ' ')
		if echo "$dg" | grep -q '"delegations_granted":[1-9]' && echo "$dg" | grep -q '"delegations_returned":[1-9]'; then
			echo "PASS: 4.1 read delegations granted and recalled by FUSE writes: $dg"
		else
			echo "FAIL: 4.1 delegations: $dg"; FAILED=1
		fi
	fi
	w0=$(seqid_waits)
	if guest "basic-$d" "$v" guest-basic.sh "$d"; then
		w1=$(seqid_waits)
		# opstorm: one open-owner and one lock-owner busy on 16 files at once
		if [ "$v" = 4.1 ]; then
			if [ -n "$w0" ] && [ "$w0" = "$w1" ]; then
				echo "PASS: 4.1 never waited on an owner seqid (seqid_waits $w0 -> $w1)"
			else
				echo "FAIL: 4.1 waited on owner seqids (seqid_waits '$w0' -> '$w1')"
				FAILED=1
			fi
		elif [ "$v" = 4.0 ]; then
			echo "note: 4.0 seqid_waits $w0 -> $w1 (the Linux client orders an owner's requests itself)"
		fi
		if [ "$(cat "$MNT/$d/from-nfs.txt" 2>/dev/null)" = "written through nfs" ]; then
			echo "PASS: $d/from-nfs.txt seen through the FUSE mount"
		else
			echo "FAIL: $d/from-nfs.txt not seen through the FUSE mount"
			FAILED=1
		fi
		[ "$(ls "$MNT/$d/many" | wc -l)" = 2000 ] || { echo "FAIL: FUSE sees $(ls "$MNT/$d/many" | wc -l) of 2000 entries"; FAILED=1; }
	fi

	# the restart: the driver watches for the guest's request through FUSE,
	# restarts the gateway, and once the new one serves writes "restart-done"
	# into the request file; the guest waits for that before going on
	rd=restart$d
	guest "restart-$d" "$v" guest-restart.sh "$rd" &
	GPID=$!
	restarted=0
	for _ in $(seq $((KCLIENT_TIMEOUT * 10))); do
		if [ -e "$MNT/restart-request-$rd" ]; then
			stop_fuse
			start_fuse || { FAILED=1; break; }
			echo restart-done > "$MNT/restart-request-$rd"
			restarted=1
			break
		fi
		kill -0 $GPID 2>/dev/null || break
		sleep 0.1
	done
	wait $GPID || FAILED=1
	[ $restarted = 1 ] || { echo "FAIL: the guest never asked for the restart"; FAILED=1; }
	rm -f "$MNT/restart-request-$rd"
done

# reload: the export becomes read-only under a mounted guest, and rw again
# (the driver answers the guest's asks through FUSE, which exports do not touch)
asok() { "$CLI" --timeout 20 daemon "$T/client.asok" "$@" >> "$T/reload.out" 2>&1; }
reload_test() {  # reload_test VERS
	local v=$1 d=reload${1/./} gpid ok=1
	guest "reload-$d" "$v" guest-reload.sh "$d" &
	gpid=$!
	if wait_out "$T/reload-$d.out" "RELOAD ASK RO" $gpid; then
		asok config set nfs_exports "id=1,path=/,ro,no_root_squash,insecure" && asok exports reload || ok=0
		echo ro-done > "$MNT/$d/req"
	fi
	if wait_out "$T/reload-$d.out" "RELOAD ASK RW" $gpid; then
		asok config set nfs_exports "id=1,path=/,rw,no_root_squash,insecure" && asok exports reload || ok=0
		echo rw-done > "$MNT/$d/req"
	fi
	wait $gpid || FAILED=1
	[ $ok = 1 ] || { echo "FAIL: reload-$d: the admin socket refused"; cat "$T/reload.out"; FAILED=1; }
}
for v in $VERSIONS; do
	reload_test "$v"
done

# exports below the root: the pseudo fs, ro and rw (4.1)
mkdir -p "$MNT/pdata" "$MNT/pro"
echo "read write" > "$MNT/pdata/y"
echo "read only" > "$MNT/pro/x"
stop_fuse
NFS_PORT=0      # a new guest: any port
EXTRA_OPTS=("--nfs_exports=id=1,path=/pdata,pseudo=/srv/data,rw,no_root_squash,insecure;id=2,path=/pro,pseudo=/srv/ro,ro,no_root_squash,insecure")
if start_fuse; then
	if guest pseudo 4.1 guest-pseudo.sh unused; then
		[ "$(cat "$MNT/pdata/z" 2>/dev/null)" = new ] || { echo "FAIL: pdata/z not seen through FUSE"; FAILED=1; }
	fi
else
	FAILED=1
fi

# knfsd's defaults: an export that gives only id, path and insecure (the
# guest arrives from ports >= 1024 through qemu's NAT) is ro and
# root-squashed; one that adds rw is still root-squashed (4.1)
mkdir -p "$MNT/def" "$MNT/sq"
echo "from fuse" > "$MNT/def/seen"
chmod 1777 "$MNT/sq"
echo "root's" > "$MNT/sq/rootfile" && chmod 644 "$MNT/sq/rootfile"
stop_fuse
NFS_PORT=0
EXTRA_OPTS=("--nfs_exports=id=1,path=/def,pseudo=/srv/def,insecure;id=2,path=/sq,pseudo=/srv/sq,rw,insecure")
if start_fuse; then
	if guest defaults 4.1 guest-defaults.sh unused; then
		[ "$(stat -c %u:%g "$MNT/sq/new" 2>/dev/null)" = 65534:65534 ] ||
			{ echo "FAIL: sq/new through FUSE is owned by $(stat -c %u:%g "$MNT/sq/new")"; FAILED=1; }
	fi
else
	FAILED=1
fi

if [ "$FAILED" = 0 ]; then echo "ALL PASSED"; exit 0; fi
exit 1
