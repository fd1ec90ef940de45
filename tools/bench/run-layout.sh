#!/usr/bin/env bash
# run-layout.sh - one large file's sequential write and read through
# loligo-fuse on RADOS, in directories of different layouts (issue 22.4):
# the plain layout (4 MiB objects, one after another) against files striped
# over 4 objects at once.
#
#   tools/bench/run-layout.sh [--build DIR] [--ceph DIR | --ceph-start [--osds N]] [--runs N]
#                             [--size MIB] [--layouts LIST] [--keep]
#
#   --ceph DIR / --ceph-start   the cluster (../shared/ceph/start-cluster.sh;
#                   --ceph-start makes one in the temp dir: one memstore OSD)
#   --size MIB      the file's size in MiB (default 1024)
#   --layouts LIST  comma-separated NAME=OBJECT_SIZE:STRIPE_UNIT:STRIPE_COUNT
#                   (default plain=4194304:4194304:1,su1m_sc4=4194304:1048576:4,
#                   su64k_sc4=4194304:65536:4)
#   --runs N        every layout N times, alternating (default 1)
#   --osds N        with --ceph-start: N BlueStore OSDs (osd.0 and N-1 more,
#                   tests/lib-ceph.sh ceph_add_osd) instead of one memstore
#                   OSD, so that a striped file's objects land on several
#                   OSDs (BlueStore: a block file of 4 GiB each in the temp dir)
#
# Each row: `dd if=/dev/zero bs=4M conv=fsync` into a new file of a
# directory with that loligo.dir.layout, then a remount (cold client cache)
# and `dd of=/dev/null bs=4M` of it; MiB/s as dd says.  The last lines are
# the table: TABLE layout | write MiB/s | read MiB/s (min-max over runs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-layout bench_fs=layoutbench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
size=1024 osds=1
layouts=plain=4194304:4194304:1,su1m_sc4=4194304:1048576:4,su64k_sc4=4194304:65536:4
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--size) size=$2; shift ;;
	--layouts) layouts=$2; shift ;;
	--osds) osds=$2; shift ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
bench_need dd python3 fusermount3
[[ -n $ceph_dir || $ceph_start == 1 ]] || bench_usage "needs --ceph DIR or --ceph-start"
bench_workdir
cleanup() {
	bench_cleanup
	if ((keep)); then echo "run-layout: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if ((ceph_start && osds > 1)); then
	ceph_dir=$work/ceph
	cluster_started=1   # bench_cleanup wipes it (ceph_stop: the added OSDs too)
	ceph_start "$ceph_dir" "$work/ceph-start.log" CEPH_POOL= CEPH_STORE=bluestore CEPH_STORE_GB=4 ||
		{ echo "$bench: could not start a Ceph cluster (see above)" >&2; exit 1; }
	for i in $(seq 1 $((osds - 1))); do
		ceph_add_osd "$ceph_dir" "$i" || { echo "$bench: could not add osd.$i" >&2; exit 1; }
	done
	for _ in $(seq 1 300); do
		up=$(ceph -c "$ceph_dir/ceph.conf" osd stat -f json 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["num_up_osds"])' 2>/dev/null)
		[[ $up == "$osds" ]] && break
		sleep 0.2
	done
	[[ $up == "$osds" ]] || { echo "$bench: $up of $osds OSDs up" >&2; exit 1; }
	echo "cluster: $osds BlueStore OSDs"
elif ((ceph_start)); then
	bench_ceph_start
fi

t=rados   # loligo_setup's `local t=$1 conf=$work/$t.conf` expands $t before it is local
loligo_setup rados
loligo_mount rados
mnt=$work/rados.mnt
IFS=, read -r -a rows <<<"$layouts"
for r in "${rows[@]}"; do
	name=${r%%=*}
	IFS=: read -r os su sc <<<"${r#*=}"
	mkdir "$mnt/$name"
	# (setfattr/getfattr of the attr package, in python: one dependency less)
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "loligo.dir.layout", sys.argv[2].encode())' \
		"$mnt/$name" "object_size=$os stripe_unit=$su stripe_count=$sc"
	echo "layout $name: $(python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "loligo.dir.layout").decode())' "$mnt/$name")"
done

mibs() { # dd's stderr -> MiB/s
	awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") { t = $(i - 1) } ; b = $1 }
	     END { if (t > 0) printf "%.0f", b / 1048576 / t }' "$1"
}
declare -A wr rd
for run in $(seq 1 "$runs"); do
	for r in "${rows[@]}"; do
		name=${r%%=*}
		f=$mnt/$name/file.$run
		bg_run dd if=/dev/zero of="$f" bs=4M count=$((size / 4)) conv=fsync 2>"$work/dd.w" ||
			{ cat "$work/dd.w" >&2; exit 1; }
		umount_target rados; mount_target rados
		bg_run dd if="$f" of=/dev/null bs=4M 2>"$work/dd.r" || { cat "$work/dd.r" >&2; exit 1; }
		w=$(mibs "$work/dd.w") rr=$(mibs "$work/dd.r")
		echo "run $run $name: write $w MiB/s, read $rr MiB/s"
		wr[$name]+="$w " rd[$name]+="$rr "
		rm -f "$f"
	done
done
range() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print (lo == hi ? lo : lo "-" hi) }'; }
echo "TABLE | layout | write MiB/s | read MiB/s |"
for r in "${rows[@]}"; do
	name=${r%%=*}
	echo "TABLE | $name (${r#*=}) | $(range <<<"${wr[$name]}") | $(range <<<"${rd[$name]}") |"
done
