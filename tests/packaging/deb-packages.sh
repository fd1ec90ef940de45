#!/usr/bin/env bash
# deb-packages.sh [-j N] - the Debian packages as an operator gets them
# (issue 11.5): build them, look inside, install them, run what the systemd
# units run, use the filesystem, purge them.
#
#   build:    dpkg-buildpackage -us -uc -b in a copy of the source tree
#             (the tracked and new files, not build dirs), so the .debs land
#             in a temporary directory, never next to the checkout;
#   inspect:  dpkg -c of each package against the files it must ship,
#             Depends, and lintian (errors fail, when lintian is there);
#   install:  `apt-get install ./*.deb` into a copy-on-write view of this
#             machine (an overlay of / in a mount, PID and network
#             namespace of our own, chrooted): the real / is never touched,
#             so the test can run on a shared machine and CI alike;
#   run:      the example config, mkfs and the first key as README.Debian
#             says, then each unit's ExecStartPre/ExecStart/ExecReload/
#             ExecStopPost with its specifiers and Environment= expanded
#             and its RuntimeDirectory/StateDirectory/LogsDirectory made, as
#             systemd would (systemd is not PID 1 here;
#             `systemd-analyze verify` checks the units themselves); a mount
#             through mount(8) and the helper in /sbin; write and read a
#             file; `loligo -s`; logrotate's packaged file; SIGTERM stops;
#   purge:    apt-get purge leaves none of the packages' files behind.
# Needs root, dpkg-dev, debhelper and the build dependencies (install-deps.sh).
# Takes about 3 minutes on 2 cores (most of it the package build).
# Exit: 0 pass, 1 fail.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=2 DEBS=
while [ $# -gt 0 ]; do
	case $1 in
	-j) JOBS=${2:?-j N}; shift 2 ;;
	--debs) DEBS=${2:?--debs DIR}; shift 2 ;;	# packages built before: skip the build
	*) echo "usage: deb-packages.sh [-j N] [--debs DIR]" >&2; exit 2 ;;
	esac
done
fail() { echo "FAIL: $*"; exit 1; }

if [ "${DEB_PACKAGES_INNER:-}" = "" ]; then
	[ "$(id -u)" = 0 ] || fail "run as root (namespaces, chroot, a FUSE mount)"
	for c in dpkg-buildpackage dh unshare chroot ip; do
		command -v $c > /dev/null || fail "$c missing (apt-get install dpkg-dev debhelper util-linux iproute2)"
	done
	[ -e /dev/fuse ] || fail "/dev/fuse missing"
	grep -qw overlay /proc/filesystems || modprobe overlay 2> /dev/null
	grep -qw overlay /proc/filesystems || fail "no overlayfs in this kernel"
	T=$(mktemp -d /tmp/loligo-deb.XXXXXX)
	trap 'rm -rf "$T"' EXIT
	# ---- build ------------------------------------------------------------------
	V=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
	mkdir -p "$T/src/loligo-$V"
	if git -C "$SRC" rev-parse --git-dir > /dev/null 2>&1; then
		(cd "$SRC" && git ls-files -z -c -o --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2> /dev/null) |
			tar -C "$T/src/loligo-$V" -xf -
	else
		tar -C "$SRC" --exclude='./build*' --exclude=./obj-* -cf - . | tar -C "$T/src/loligo-$V" -xf -
	fi
	t0=$(date +%s)
	if [ -n "$DEBS" ]; then
		cp "$DEBS"/*.deb "$DEBS"/*.changes "$DEBS"/*.buildinfo "$T/src/" || fail "no packages in $DEBS"
	else
		(cd "$T/src/loligo-$V" && DEB_BUILD_OPTIONS="nocheck parallel=$JOBS" dpkg-buildpackage -us -uc -b) \
			> "$T/build.log" 2>&1 || { tail -40 "$T/build.log"; fail "dpkg-buildpackage -us -uc -b failed"; }
		echo "PASS: dpkg-buildpackage -us -uc -b built $(cd "$T/src" && ls *.deb | grep -vc dbgsym) packages in $(($(date +%s) - t0)) s"
	fi

	# ---- inspect ----------------------------------------------------------------
	declare -A WANT=(
		[loligo-common]="./usr/bin/loligo ./usr/share/bash-completion/completions/loligo ./etc/logrotate.d/loligo
		                 ./etc/loligo/loligo.conf.example ./lib/systemd/system/loligo.target
		                 ./usr/share/doc/loligo-common/README.Debian ./var/log/loligo/ ./var/lib/loligo/
		                 ./usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/loligo/store_rados.so"
		[loligo-mds]="./usr/bin/loligo-mds ./lib/systemd/system/loligo-mds@.service"
		[loligo-fuse]="./usr/bin/loligo-fuse ./sbin/mount.fuse.loligo ./lib/systemd/system/loligo-fuse@.service")
	for p in loligo-common loligo-mds loligo-fuse; do
		deb=$(ls "$T/src/${p}_${V}_"*.deb 2> /dev/null) || fail "no $p package: $(ls "$T/src")"
		dpkg -c "$deb" | awk '{print $1, $6}' > "$T/$p.list"
		for f in ${WANT[$p]}; do
			grep -q " $f\$" "$T/$p.list" || fail "$p does not ship $f: $(awk '{print $2}' "$T/$p.list" | tr '\n' ' ')"
		done
		awk '$2 ~ /\/s?bin\/[^\/]+$/ && $1 !~ /^-rwxr-xr-x/ {print}' "$T/$p.list" | grep . && fail "$p: a program that is not 0755"
	done
	dpkg-deb -f "$T/src/loligo-fuse_${V}_"*.deb Depends | grep -qw fuse3 || fail "loligo-fuse does not depend on fuse3"
	# the rados backend is a module the programs load, not link: its package must bring librados
	dpkg-deb -f "$T/src/loligo-common_${V}_"*.deb Depends | grep -qw librados2 ||
		fail "loligo-common (with the rados module) does not depend on librados2"
	for p in mds fuse; do
		dpkg-deb -f "$T/src/loligo-${p}_${V}_"*.deb Depends | grep -q "loligo-common (= $V)" ||
			fail "loligo-$p does not depend on loligo-common (= $V)"
	done
	if command -v lintian > /dev/null; then
		lintian --fail-on error "$T/src/loligo_${V}_"*.changes > "$T/lintian.out" 2>&1 ||
			fail "lintian: $(grep '^E:' "$T/lintian.out" | head -10)"
		echo "PASS: lintian: no errors ($(grep -c '^W:' "$T/lintian.out") warnings: $(grep '^W:' "$T/lintian.out" |
			awk '{print $3}' | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}' | sed 's/, $//'))"
	fi
	echo "PASS: dpkg -c: loligo-common (CLI, completion, logrotate, example config, loligo.target, the rados module), loligo-mds, loligo-fuse (/sbin/mount.fuse.loligo) and their units"

	# ---- install, run, purge: in namespaces of our own ------------------------
	DEB_PACKAGES_INNER=1 T=$T V=$V unshare --mount --pid --net --fork --propagation private "$0" ||
		exit 1
	echo "ALL PASSED"
	exit 0
fi

if [ "$DEB_PACKAGES_INNER" = 1 ]; then
	# a copy-on-write root: the overlay's upper layer is a tmpfs that dies with us
	R=$T/root
	mkdir -p "$T/ovl" "$R"
	mount -t tmpfs tmpfs "$T/ovl" && mkdir "$T/ovl/up" "$T/ovl/wk" || fail "tmpfs"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$T/ovl/up,workdir=$T/ovl/wk" "$R" || fail "overlay mount"
	mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" && mount --rbind /dev "$R/dev" &&
		mount -t tmpfs tmpfs "$R/run" || fail "proc/sys/dev/run in the new root"
	ip link set lo up || fail "lo up"
	mkdir -p "$R/debs" && cp "$T"/src/loligo-{common,mds,fuse}_"$V"_*.deb "$R/debs/"
	cp "$0" "$R/deb-packages.sh"
	DEB_PACKAGES_INNER=2 chroot "$R" /bin/bash /deb-packages.sh
	exit $?
fi

# ---- inside the chroot (DEB_PACKAGES_INNER=2): a fresh PID 1 namespace, our own lo --
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
unset LOLIGO_FUSE
L=/tmp/deb-smoke
mkdir -p $L
PIDS=()
cleanup() {
	for m in /mnt/loligo /mnt/loligo2; do grep -q " $m " /proc/mounts && umount -l $m; done
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2> /dev/null; done
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in $L/*.out /var/log/loligo/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -20 "$f"; }; done
	exit 1
}
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends /debs/*.deb > $L/apt.out 2>&1 || fail "apt-get install ./*.deb"
grep -qi 'newly installed' $L/apt.out || fail "apt-get installed nothing: $(tail -5 $L/apt.out)"
for f in /usr/bin/loligo /usr/bin/loligo-mds /usr/bin/loligo-fuse /sbin/mount.fuse.loligo /etc/logrotate.d/loligo \
	/etc/loligo/loligo.conf.example /lib/systemd/system/loligo.target /lib/systemd/system/loligo-mds@.service \
	/lib/systemd/system/loligo-fuse@.service /usr/share/bash-completion/completions/loligo; do
	[ -e $f ] || fail "$f not installed"
done
ls /usr/lib/*/loligo/store_rados.so > /dev/null 2>&1 || fail "the rados module (/usr/lib/*/loligo/store_rados.so) not installed"
echo "PASS: apt-get install ./loligo-{common,mds,fuse}_${V}_*.deb"

# the units themselves: systemd's own checker (it needs the programs they name installed)
systemd-analyze verify /lib/systemd/system/loligo.target /lib/systemd/system/loligo-mds@loligo.service \
	/lib/systemd/system/loligo-fuse@mnt-loligo.service > $L/verify.out 2>&1 ||
	fail "systemd-analyze verify: $(cat $L/verify.out)"
grep -v 'Failed to \(connect\|open\)\|not found\|/run/systemd' $L/verify.out | grep -i 'loligo' &&
	fail "systemd-analyze verify complains about our units"
echo "PASS: systemd-analyze verify loligo.target loligo-mds@loligo.service loligo-fuse@mnt-loligo.service"

# unit_cmd UNIT INSTANCE KEY: the unit's KEY= lines with the specifiers systemd expands
# (%i, %I, %f; ${CLUSTER} from Environment=, $MAINPID from the running main process)
unit_cmd() {
	local u=/lib/systemd/system/$1 inst=$2 key=$3 unesc f cluster
	unesc=$(systemd-escape -u -- "$inst")
	f=/${unesc#/}
	cluster=$(sed -n 's/^Environment=CLUSTER=//p' "$u")
	sed -n "s/^$key=//p" "$u" | while IFS= read -r c; do
		c=${c//%i/$inst}; c=${c//%I/$unesc}; c=${c//%f/$f}
		c=${c//\$\{CLUSTER\}/$cluster}; c=${c//\$MAINPID/${MAINPID:-0}}
		printf '%s\n' "$c"
	done
}
# unit_dirs UNIT: make what RuntimeDirectory=, StateDirectory=, LogsDirectory= ask for
unit_dirs() {
	local u=/lib/systemd/system/$1 d
	for d in $(sed -n 's/^RuntimeDirectory=//p' "$u"); do mkdir -p /run/$d; done
	for d in $(sed -n 's/^StateDirectory=//p' "$u"); do mkdir -p /var/lib/$d; done
	for d in $(sed -n 's/^LogsDirectory=//p' "$u"); do mkdir -p /var/log/$d; done
}
# run_cmds UNIT INSTANCE KEY: run them in order ("-" prefix: a failure is ignored)
run_cmds() {
	local c ign
	while IFS= read -r c; do
		ign=0
		[ "${c#-}" != "$c" ] && { ign=1; c=${c#-}; }
		eval "$c" >> $L/units.out 2>&1 || [ $ign = 1 ] || fail "$1 $3=$c failed"
	done < <(unit_cmd "$1" "$2" "$3")
}
# start UNIT INSTANCE: ExecStartPre, then ExecStart in the background (Type=simple); sets MAINPID
start() {
	unit_dirs "$1"
	run_cmds "$1" "$2" ExecStartPre
	local c
	c=$(unit_cmd "$1" "$2" ExecStart)
	[ -n "$c" ] || fail "$1 has no ExecStart"
	eval "exec $c" > "$L/$1.out" 2>&1 &
	MAINPID=$!
	PIDS+=($MAINPID)
}

CONF=/etc/loligo/loligo.conf
cp /etc/loligo/loligo.conf.example $CONF
# a standby MDS on this host (loligo-mds@loligo:b), as loligo.conf.example shows
sed -i 's/^client_mds_addr = .*/client_mds_addr = 127.0.0.1:6800,127.0.0.1:6801/' $CONF
printf '[mds.b]\nmds_port = 6801\nmds_beacon_interval = 0.5\n' >> $CONF
# as README.Debian says, before the first start
loligo-mds -c $CONF --mkfs > $L/mkfs.out 2>&1 || fail "loligo-mds -c $CONF --mkfs"
loligo auth get-or-create client.admin --keyring /etc/loligo/mds.keyring -o /etc/loligo/client.keyring \
	> $L/auth.out 2>&1 || fail "loligo auth get-or-create client.admin"
[ "$(stat -c %a /etc/loligo/client.keyring)" = 600 ] || fail "client.keyring is not mode 0600"

start loligo-mds@.service loligo
MDS_PID=$MAINPID
for _ in $(seq 150); do loligo -c $CONF --timeout 2 daemon mds.0 version > /dev/null 2>&1 && break; sleep 0.2; done
loligo -c $CONF --timeout 5 daemon mds.0 version > /dev/null 2>&1 || fail "loligo-mds@loligo does not answer"
[ -S /run/loligo/loligo-mds.0.asok ] && [ -f /var/log/loligo/loligo-mds.0.log ] ||
	fail "the MDS's socket and log are not where the example config says: $(ls /run/loligo /var/log/loligo)"

start loligo-mds@.service loligo:b
STANDBY_PID=$MAINPID
fs_standbys() { # how many live standbys rank 0's holder sees
	loligo -c $CONF --timeout 2 --format json fs status 2> /dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(sum(1 for s in j["mdsmap"]["standbys"] if s["state"] == "standby"))' 2> /dev/null
}
for _ in $(seq 150); do [ "$(fs_standbys)" = 1 ] && break; sleep 0.2; done
[ "$(fs_standbys)" = 1 ] || fail "loligo-mds@loligo:b is not a standby of mds.0: $(tail -3 /var/log/loligo/loligo-mds.b.log)"
[ -S /run/loligo/loligo-mds.b.asok ] && fail "the standby opened an admin socket before it holds rank 0"
echo "PASS: loligo-mds@loligo:b ([mds.b], port 6801) stands by for rank 0"

INST=$(systemd-escape -p /mnt/loligo)
start loligo-fuse@.service "$INST"
FUSE_PID=$MAINPID
for _ in $(seq 150); do grep -q " /mnt/loligo fuse.loligo " /proc/mounts && break; sleep 0.2; done
grep -q " /mnt/loligo fuse.loligo " /proc/mounts || fail "loligo-fuse@$INST did not mount /mnt/loligo"
head -c 3000000 /dev/urandom > $L/data
cp $L/data /mnt/loligo/data && sync -f /mnt/loligo/data || fail "write through the mount"
cmp $L/data /mnt/loligo/data || fail "read back differs"
echo "PASS: the units' commands as systemd runs them: loligo-mds@loligo and loligo-fuse@$INST; 3 MB written and read back"

# mount(8) and fstab's way: the helper in /sbin, loligo-fuse found on mount's PATH
mount.fuse.loligo --version > $L/helper.out 2>&1 && grep -q "running /usr/bin/loligo-fuse" $L/helper.out ||
	fail "mount.fuse.loligo does not find /usr/bin/loligo-fuse: $(cat $L/helper.out)"
mkdir -p /mnt/loligo2
mount -t fuse.loligo none /mnt/loligo2 -o conf=$CONF > $L/mount.out 2>&1 || fail "mount -t fuse.loligo: $(cat $L/mount.out)"
cmp $L/data /mnt/loligo2/data || fail "the second mount reads other data"
umount /mnt/loligo2 || fail "umount /mnt/loligo2"
echo "PASS: mount -t fuse.loligo none /mnt/loligo2 -o conf=$CONF (/sbin/mount.fuse.loligo runs /usr/bin/loligo-fuse)"

loligo -c $CONF --format json status > $L/status.json 2> $L/status.err || fail "loligo status: exit $?: $(cat $L/status.err)"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
h = j["health"]["status"]
assert h == "HEALTH_OK", "health %s: %s" % (h, j["health"])
' $L/status.json > $L/status.out 2>&1 || fail "loligo status: $(cat $L/status.out)"
loligo -c $CONF -s > $L/s.out 2>&1 || fail "loligo -s"
grep -q HEALTH_OK $L/s.out || fail "loligo -s: $(cat $L/s.out)"
echo "PASS: loligo -s against the installed daemons: HEALTH_OK"

# ExecReload (SIGHUP) and the packaged logrotate file: both keep serving
MAINPID=$MDS_PID run_cmds loligo-mds@.service loligo ExecReload
MAINPID=$FUSE_PID run_cmds loligo-fuse@.service "$INST" ExecReload
logrotate -f -s $L/logrotate.state /etc/logrotate.d/loligo > $L/logrotate.out 2>&1 || fail "logrotate: $(cat $L/logrotate.out)"
ls /var/log/loligo/loligo-mds.0.log.1 > /dev/null 2>&1 || fail "logrotate did not rotate: $(ls /var/log/loligo)"
for _ in $(seq 100); do [ -f /var/log/loligo/loligo-mds.0.log ] && break; sleep 0.1; done
[ -f /var/log/loligo/loligo-mds.0.log ] || fail "the MDS did not reopen its log after the rotation"
kill -0 $MDS_PID && kill -0 $FUSE_PID || fail "a daemon stopped on reload/logrotate"
echo x > /mnt/loligo/after-reload && loligo -c $CONF -s > /dev/null || fail "not serving after reload/logrotate"
echo "PASS: ExecReload (SIGHUP) and /etc/logrotate.d/loligo: logs reopened, both keep serving"

# the active dies: the standby takes rank 0 (its host lock is free at once) and the mount follows
kill -KILL $MDS_PID; wait $MDS_PID
for _ in $(seq 150); do loligo -c $CONF --timeout 2 daemon mds.b version > /dev/null 2>&1 && break; sleep 0.2; done
loligo -c $CONF --timeout 5 daemon mds.b version > /dev/null 2>&1 || fail "mds.b did not take rank 0: $(tail -5 /var/log/loligo/loligo-mds.b.log)"
echo y > /mnt/loligo/after-failover && cmp $L/data /mnt/loligo/data || fail "the mount does not follow rank 0 to mds.b"
loligo -c $CONF --format json fs status > $L/fss.json 2>&1 || fail "fs status after the failover"
grep -q '"name": *"mds.b"' $L/fss.json || fail "fs status does not name mds.b: $(cat $L/fss.json)"
MDS_PID=$STANDBY_PID
echo "PASS: kill -9 of loligo-mds@loligo: loligo-mds@loligo:b took rank 0, the mount followed"

# stop as systemd does: SIGTERM to the main process, then ExecStopPost
kill -TERM $FUSE_PID; wait $FUSE_PID; rc=$?
MAINPID=$FUSE_PID run_cmds loligo-fuse@.service "$INST" ExecStopPost
[ $rc = 0 ] || fail "loligo-fuse exit $rc on SIGTERM"
grep -q " /mnt/loligo " /proc/mounts && fail "/mnt/loligo still mounted after stop"
kill -TERM $MDS_PID; wait $MDS_PID; rc=$?
[ $rc = 0 ] || fail "loligo-mds exit $rc on SIGTERM"
echo "PASS: SIGTERM stops both (exit 0), ExecStopPost, unmounted"

apt-get purge -y loligo-common loligo-mds loligo-fuse > $L/purge.out 2>&1 || fail "apt-get purge: $(tail -5 $L/purge.out)"
left=$(dpkg -l 'loligo*' 2> /dev/null | awk '/^[a-z][a-z] +loligo/ && $1 != "un" && $1 != "pn" {print $1, $2}')
[ -z "$left" ] || fail "still known to dpkg after purge: $left"
for f in /usr/bin/loligo /usr/bin/loligo-mds /usr/bin/loligo-fuse /sbin/mount.fuse.loligo /etc/logrotate.d/loligo \
	/etc/loligo/loligo.conf.example /lib/systemd/system/loligo.target /lib/systemd/system/loligo-mds@.service \
	/lib/systemd/system/loligo-fuse@.service /usr/share/bash-completion/completions/loligo /var/log/loligo; do
	[ -e $f ] && fail "$f left after purge"
done
[ -d /var/lib/loligo ] || fail "purge removed /var/lib/loligo (the filesystem's data)"
echo "PASS: apt-get purge: no package file left; /var/lib/loligo (data) kept"
exit 0
