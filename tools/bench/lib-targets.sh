# shellcheck shell=bash disable=SC2034,SC2154  # variables shared with the sourcing script
# lib-targets.sh - the mounts the FUSE benchmarks compare, and the options,
# checks and temp dir they share; sourced by run-fio.sh and run-untar.sh
# (not run on its own).
#
# Targets: "local" (loligo-mds --mkfs on a local store in the work dir +
# loligo-fuse), "rados" (the same on RADOS of a cluster made by
# ../shared/ceph/start-cluster.sh with CEPH_MDS=1, its own pools), "local0"
# and "rados0" (the same with the binaries of another build tree, for
# before/after) and
# "cephfuse" (../shared/ceph/mount-cephfs.sh on that cluster's CephFS).
#
# The sourcing script sets, before it sources this file:
#   bench       its name, for messages ("run-fio"); bench_fs: the loligo
#               filesystem name prefix on RADOS ("fiobench")
#   top         the source tree; shared: ../shared
# then parses its arguments with bench_opt (the options both scripts take:
# --build --ceph --ceph-start --runs --targets --compare --tsv --keep
# --help; defaults set here) and bench_usage, checks them with bench_check
# and bench_need, and makes its temp dir with bench_workdir:
#   work        the temp dir everything lives in (configs, logs, mounts)
#   build       the build tree; compare: the other one for local0/rados0 (or empty)
#   cli         $build/tools/cli/loligo; compare_label: compare's short commit
#   ceph_dir    the cluster's directory (or empty)
# and gets: mds_pid[T], mds_port[T], fuse_pid[T], fuse2_pid, ceph_mnt,
# cluster_started (bench_ceph_start).  bench_cleanup undoes all of it; call it
# from the script's EXIT trap.

# shellcheck source=tests/lib-ceph.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tests/lib-ceph.sh"
ceph_scripts=$shared/ceph

# the shared options' defaults
build=${LOLIGO_BUILD_DIR:-$top/build} runs=1 keep=0 ceph_dir= ceph_start=0 targets= tsv= compare=

bench_usage() { # MSG: a wrong argument
	echo "$bench: $1 (try --help)" >&2
	exit 2
}
# bench_opt ARGS...: if $1 is one of the shared options, take it (and its
# value): 0 with bench_nargs = the words it used; else 1
bench_opt() {
	bench_nargs=1
	case $1 in
	--build|--ceph|--runs|--targets|--compare|--tsv)
		(($# >= 2)) || bench_usage "$1 needs a value"
		bench_nargs=2 ;;
	esac
	case $1 in
	--build) build=$2 ;;
	--ceph) ceph_dir=$(cd "$2" 2>/dev/null && pwd) || bench_usage "--ceph $2: no such directory" ;;
	--ceph-start) ceph_start=1 ;;
	--runs) runs=$2 ;;
	--targets) targets=$2 ;;
	--compare) compare=$(cd "$2" 2>/dev/null && pwd) || bench_usage "--compare $2: no such directory" ;;
	--tsv) tsv=$2 ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;   # the comment at the top of the script
	*) return 1 ;;
	esac
}
bench_need() { # CMD...: each on PATH, or exit 1
	local b
	for b in "$@"; do
		command -v "$b" >/dev/null || { echo "$bench: needs $b (install-deps.sh --bench)" >&2; exit 1; }
	done
}
# after the options: the build trees (and cli), --runs, ceph-fuse for a cluster
bench_check() {
	build=$(cd "$build" 2>/dev/null && pwd) || { echo "$bench: --build: no build tree $build" >&2; exit 1; }
	[[ $runs =~ ^[1-9][0-9]*$ ]] || bench_usage "--runs takes a positive number"
	cli=$build/tools/cli/loligo
	local b
	for b in "$build" ${compare:+"$compare"}; do
		[[ -x $b/mds/loligo-mds && -x $b/client/fuse/loligo-fuse && -x $b/tools/cli/loligo ]] ||
			{ echo "$bench: no loligo-mds/loligo-fuse/loligo in $b" >&2; exit 1; }
	done
	if [[ -n $ceph_dir || $ceph_start == 1 ]]; then
		command -v ceph-fuse >/dev/null || { echo "$bench: needs ceph-fuse and ceph-mds (install-deps.sh --bench)" >&2; exit 1; }
	fi
}
# the temp dir (/tmp/loligo-fio.XXXXXX for run-fio) and what lives in it
bench_workdir() {
	work=$(mktemp -d "/tmp/loligo-${bench#run-}.XXXXXX")
	chmod 755 "$work"
	ceph_mnt=$work/cephfuse.mnt
	compare_label=
	[[ -n $compare ]] && compare_label=$(build_label "$compare")
	return 0
}

declare -A mds_pid fuse_pid mds_port
ceph_mnt= fuse2_pid= wpid=

# bg_run CMD...: run CMD in the background and wait for it: a signal to the
# script then reaches its trap at once, not when the command is done (and
# bench_stop_workload stops it before anything is unmounted)
bg_run() {
	"$@" &
	wpid=$!
	local st=0
	wait "$wpid" || st=$?
	wpid=
	return $st
}
bench_stop_workload() {
	[[ -n $wpid ]] && { kill -TERM "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; }
	wpid=
}

bin_of() { # TARGET -> its build tree (local0, rados0: the --compare one)
	if [[ $1 == *0 ]]; then echo "$compare"; else echo "$build"; fi
}
# the loligo filesystem name (and pool prefix) of target T on RADOS
fs_name_of() { echo "${bench_fs:-${bench//-/}}$$$1"; }

unmount() { # MNT PID
	local m=$1 p=${2:-}
	if grep -q " $m fuse" /proc/mounts; then
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
	fi
	[[ -n $p ]] || return 0
	for _ in $(seq 1 200); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
}

# bench_ceph_start: a cluster of our own in $work/ceph on a free port
# (memstore OSD, CEPH_MDS=1, no pool: ours make their own); sets ceph_dir and
# cluster_started
bench_ceph_start() {
	ceph_dir=$work/ceph
	cluster_started=1   # bench_cleanup wipes it, also when a signal cuts the start short
	ceph_start "$ceph_dir" "$work/ceph-start.log" CEPH_MDS=1 CEPH_POOL= ||
		{ echo "$bench: could not start a Ceph cluster (see above)" >&2; exit 1; }
}

bench_cleanup() {
	set +e
	trap '' INT TERM   # a second signal must not cut the cleanup short
	local t p
	bench_stop_workload   # the workload first: nothing may keep a mount busy
	for t in "${!fuse_pid[@]}"; do [[ $t == cephfuse ]] || unmount "$work/$t.mnt" "${fuse_pid[$t]}"; done
	[[ -d $work/local2.mnt ]] && unmount "$work/local2.mnt" "$fuse2_pid"
	cephfuse_umount
	for t in "${!mds_pid[@]}"; do kill -TERM "${mds_pid[$t]}" 2>/dev/null && wait "${mds_pid[$t]}" 2>/dev/null; done
	if [[ -n ${cluster_started:-} ]]; then
		ceph_stop "$ceph_dir"
	elif [[ -n $ceph_dir ]]; then
		# our filesystems' pools: a purge cut short by the last unmount leaves
		# objects behind, and a memstore OSD holds them in RAM
		for t in "${!mds_port[@]}"; do
			[[ $t == rados* ]] || continue
			for p in "$(fs_name_of "$t")_metadata" "$(fs_name_of "$t")_data"; do
				ceph -c "$ceph_dir/ceph.conf" osd pool rm "$p" "$p" --yes-i-really-really-mean-it >/dev/null 2>&1
			done
		done
	fi
}

# loligo target T (local|local0|rados|rados0): config, mkfs, MDS
loligo_setup() {
	local t=$1
	local conf=$work/$t.conf store mds_bin   # a second local: its words expand after t is set
	mds_bin=$(bin_of "$t")/mds/loligo-mds
	[[ -s $work/client.keyring ]] ||
		"$cli" auth get-or-create client.admin --keyring "$work/keyring" -o "$work/client.keyring" >/dev/null 2>&1
	if [[ $t == local* ]]; then
		store="store_backend = local
store_local_path = $work/$t.store"
	else
		store="store_backend = rados
rados_conf = $ceph_dir/ceph.conf
fs_name = $(fs_name_of "$t")"
	fi
	cat >"$conf" <<EOF
[global]
$store
[mds]
mds_addr = 127.0.0.1
log_file = $work/$t-mds.log
mds_keyring = $work/keyring
admin_socket = $work/$t-mds.asok
[client]
log_file = $work/$t-client.log
client_keyring = $work/client.keyring
admin_socket = $work/$t-client.asok
EOF
	"$mds_bin" -c "$conf" --mkfs >"$work/$t-mds.out" 2>&1 || { echo "$bench: mkfs ($t):" >&2; tail "$work/$t-mds.out" >&2; exit 1; }
	mds_port[$t]=0   # from here on, bench_cleanup removes its pools
	"$mds_bin" -c "$conf" --mds_port=0 --port-file "$work/$t-mds.port" >>"$work/$t-mds.out" 2>&1 &
	mds_pid[$t]=$!
	for _ in $(seq 1 150); do [[ -s $work/$t-mds.port ]] && break; sleep 0.1; done
	[[ -s $work/$t-mds.port ]] || { echo "$bench: loligo-mds ($t) did not start:" >&2; tail "$work/$t-mds.out" >&2; exit 1; }
	mds_port[$t]=$(cat "$work/$t-mds.port")
	mkdir -p "$work/$t.mnt"
}
loligo_mount() { # T [MNT]
	local t=$1 m=${2:-$work/$1.mnt} p fuse_bin
	fuse_bin=$(bin_of "$t")/client/fuse/loligo-fuse
	mkdir -p "$m"
	# a second mount: its own admin socket and log ($m.asok, $m.log)
	# LOLIGO_BENCH_FUSE_ARGS: more loligo-fuse options for every mount (a
	# knob under study, e.g. --client_readahead_max=64M), split on blanks;
	# LOLIGO_BENCH_FUSE_ENV: NAME=VALUE words for loligo-fuse's environment
	# alone (e.g. GLIBC_TUNABLES=...), not the cluster's or fio's
	# shellcheck disable=SC2086
	env ${LOLIGO_BENCH_FUSE_ENV:-} "$fuse_bin" -f -c "$work/$t.conf" "--client_mds_addr=127.0.0.1:${mds_port[$t]}" ${LOLIGO_BENCH_FUSE_ARGS:-} \
		${2:+"--admin_socket=$m.asok" "--log_file=$m.log"} "$m" >>"$work/$t-client.out" 2>&1 &
	p=$!
	if [[ -z ${2:-} ]]; then fuse_pid[$t]=$p; else fuse2_pid=$p; fi
	for _ in $(seq 1 150); do grep -q " $m fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $m fuse" /proc/mounts || { echo "$bench: loligo-fuse ($t) did not mount:" >&2; tail "$work/$t-client.out" >&2; exit 1; }
}
cephfuse_mount() {
	mkdir -p "$ceph_mnt"
	"$shared/ceph/mount-cephfs.sh" "$ceph_dir" "$ceph_mnt" >>"$work/cephfuse.out" 2>&1 ||
		{ echo "$bench: ceph-fuse did not mount:" >&2; tail "$work/cephfuse.out" >&2; exit 1; }
	local pf
	pf=$(grep -l "^$ceph_mnt\$" "$ceph_dir"/run/fuse.*.mnt | head -1)
	fuse_pid[cephfuse]=$(cat "${pf%.mnt}.pid")
}
cephfuse_umount() {
	[[ -n $ceph_dir ]] || return 0
	local pf
	for pf in "$ceph_dir"/run/fuse.*.mnt; do
		[[ -e $pf && $(cat "$pf") == "$ceph_mnt" ]] || continue
		unmount "$ceph_mnt" "$(cat "${pf%.mnt}.pid" 2>/dev/null)"
		rm -f "$pf" "${pf%.mnt}.pid"
	done
	unset 'fuse_pid[cephfuse]'
}
mount_target() { if [[ $1 == cephfuse ]]; then cephfuse_mount; else loligo_mount "$1"; fi; }
umount_target() {
	if [[ $1 == cephfuse ]]; then cephfuse_umount; else unmount "$work/$1.mnt" "${fuse_pid[$1]}"; unset "fuse_pid[$1]"; fi
}
mnt_of() { if [[ $1 == cephfuse ]]; then echo "$ceph_mnt"; else echo "$work/$1.mnt"; fi; }
# Row targets of the scripts that also run ext4 (a loop device, $loopdev at
# $ext4_mnt, made fresh per row) and ceph-fuse in a directory of its own
# ($cephfs_dir) of the shared CephFS: mount TARGET / unmount it
mount_row_target() {
	case $1 in
	ext4) mkfs.ext4 -q -F "$loopdev" >"$work/mkfs.out" 2>&1 && mount "$loopdev" "$ext4_mnt" ||
		{ echo "$bench: mkfs/mount of $loopdev:" >&2; cat "$work/mkfs.out" >&2; exit 1; } ;;
	cephfuse) mount_target cephfuse
		cephfs_dir=${bench_fs:-${bench//-/}}$$
		rm -rf "${ceph_mnt:?}/$cephfs_dir"; mkdir "$ceph_mnt/$cephfs_dir" ;;
	*) mount_target "$1" ;;
	esac
}
umount_row_target() {
	case $1 in
	ext4) umount "$ext4_mnt" ;;
	cephfuse) rm -rf "${ceph_mnt:?}/$cephfs_dir"; cephfs_dir=; umount_target cephfuse ;;
	*) umount_target "$1" ;;
	esac
}
cpu_of() { # PID -> CPU seconds (utime + stime) so far
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# the label of build tree DIR for tables: its source's short commit
build_label() {
	local src
	src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null)
	git -C "${src:-$1}" rev-parse --short HEAD 2>/dev/null || basename "$1"
}
