#!/usr/bin/env bash
# run-fsstress.sh - issue 24's benchmark rows side by side in one run: LTP's
# fsstress (many processes mixing every file operation) and the cost of an
# fsync of a directory while other files are dirty, on ext4 (a loop device
# made here), loligo on the local store, and, given a Ceph cluster, loligo on
# RADOS and ceph-fuse on that same cluster.
#
#   tools/bench/run-fsstress.sh --fsstress PATH [--build DIR] [--ceph DIR | --ceph-start]
#                               [--runs N] [--procs P] [--ops N] [--seed S]
#                               [--targets LIST] [--compare DIR] [--tsv FILE] [--keep]
#
#   --fsstress PATH  an fsstress binary (LTP's testcases/kernel/fs/fsstress,
#                    built with -DNO_XFS; not part of loligo: build it from
#                    an LTP checkout)
#   --procs P        fsstress -p (default 20)
#   --ops N          fsstress -n per process (default 1000)
#   --seed S         fsstress -s (default 1; every target gets the same)
#   --build, --ceph, --ceph-start, --runs, --targets, --compare, --tsv, --keep:
#                    as run-untar.sh (targets: ext4,local,local0,rados,rados0,cephfuse)
#
# Rows, each on a fresh mount of an empty filesystem:
#   fsstress   fsstress -d DIR -p P -n N -s S: ops = P*N, ops/s; a run that
#              does not finish within 30 minutes is reported as a hang
#   dirsync    tools/bench/dirsync: median microseconds of an fsync of an empty
#              directory with 900 files of 12 KiB dirty, and with none
# The last lines are the table, min-max over the runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-fsstress bench_fs=fsstressbench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
fsstress= procs=20 nops=1000 seed=1
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--fsstress) fsstress=$2; shift ;;
	--procs) procs=$2; shift ;;
	--ops) nops=$2; shift ;;
	--seed) seed=$2; shift ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
[[ -n $fsstress && -x $fsstress ]] || bench_usage "--fsstress PATH to an fsstress binary is required"
for v in "$procs" "$nops" "$seed"; do [[ $v =~ ^[0-9]+$ ]] || bench_usage "--procs, --ops, --seed take numbers"; done
bench_need fusermount3 mkfs.ext4 losetup jq
[[ $(id -u) == 0 ]] || { echo "run-fsstress: needs root (loop device, mounts)" >&2; exit 1; }
dirsync=$build/tools/bench/dirsync
[[ -x $dirsync ]] || { echo "run-fsstress: no $dirsync (ninja -C $build dirsync)" >&2; exit 1; }

bench_workdir
loopdev= ext4_mnt=$work/ext4.mnt cephfs_dir=
cleanup() {
	set +e
	trap '' INT TERM
	bench_stop_workload
	pkill -KILL -f "^$fsstress " 2>/dev/null
	if [[ -n $cephfs_dir ]] && mountpoint -q "$ceph_mnt"; then rm -rf "${ceph_mnt:?}/$cephfs_dir"; fi
	bench_cleanup
	mountpoint -q "$ext4_mnt" && { umount "$ext4_mnt" || umount -l "$ext4_mnt"; }
	[[ -n $loopdev ]] && losetup -d "$loopdev"
	if ((keep)); then echo "run-fsstress: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

((ceph_start)) && bench_ceph_start
all_targets=ext4,local
[[ -n $compare ]] && all_targets=ext4,local0,local
[[ -n $ceph_dir ]] && all_targets=$all_targets,rados,cephfuse
[[ -n $ceph_dir && -n $compare ]] && all_targets=${all_targets/,rados,/,rados0,rados,}
targets=${targets:-$all_targets}

dir_of() {
	case $1 in
	ext4) echo "$ext4_mnt" ;;
	cephfuse) echo "$ceph_mnt/fsstressbench$$" ;;
	*) mnt_of "$1" ;;
	esac
}

record() { # RUN TARGET ROW VALUE UNIT
	local line="$1	$2	$3	$4	$5	$(cut -d' ' -f1 /proc/loadavg)"
	echo "$line" >>"$work/results"
	[[ -n $tsv ]] && echo "$line" >>"$tsv"
	printf 'run %s  %-8s %-14s %10s %s  load %s\n' "$1" "$2" "$3" "$4" "$5" "$(cut -d' ' -f1 /proc/loadavg)"
}

run_target() { # RUN TARGET
	local run=$1 t=$2 d t0 t1 rc out
	mount_row_target "$t"
	d=$(dir_of "$t")
	mkdir "$d/s"
	t0=$(date +%s.%N)
	rc=0
	bg_run timeout 1800 "$fsstress" -d "$d/s" -p "$procs" -n "$nops" -s "$seed" >"$work/$t.$run.fsstress" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	if ((rc == 124)); then
		record "$run" "$t" fsstress HANG "(no end in 30 min)"
		# a hung FUSE mount: its processes are the cleanup's to end
		return 0
	fi
	record "$run" "$t" fsstress "$(awk -v n=$((procs * nops)) -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')" \
		"ops/s ($((procs * nops)) ops in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, exit $rc)"
	rm -rf "$d/s"
	mkdir "$d/ds"
	out=$("$dirsync" "$d/ds" 900 12288 20)
	echo "    $out"
	record "$run" "$t" dirsync-busy "$(sed 's/.* bytes dirty: median \([0-9.]*\) us.*/\1/' <<<"$out")" us
	record "$run" "$t" dirsync-idle "$(sed 's/.*none dirty: median \([0-9.]*\) us.*/\1/' <<<"$out")" us
	rm -rf "$d/ds"
	umount_row_target "$t"
}

echo "== run-fsstress: $(nproc) CPUs, kernel $(uname -r), fsstress -p $procs -n $nops -s $seed ($fsstress)," \
	"targets $targets, runs $runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n $compare ]] && echo "== local0/rados0: loligo built from $compare_label ($compare)"
[[ -n $ceph_dir ]] && echo "== ceph: $ceph_dir ($(ceph-fuse --version 2>/dev/null | head -1))"
IFS=, read -ra tl <<<"$targets"
for t in "${tl[@]}"; do
	case $t in
	ext4) truncate -s 8G "$work/ext4.img"
		loopdev=$(losetup -f --show "$work/ext4.img") || { echo "run-fsstress: losetup failed" >&2; exit 1; }
		mkdir -p "$ext4_mnt" ;;
	local|local0|rados|rados0) loligo_setup "$t" ;;
	cephfuse) [[ -n $ceph_dir ]] || { echo "run-fsstress: cephfuse needs --ceph DIR or --ceph-start" >&2; exit 2; } ;;
	*) echo "run-fsstress: unknown target $t" >&2; exit 2 ;;
	esac
done
for run in $(seq 1 "$runs"); do
	for t in "${tl[@]}"; do run_target "$run" "$t"; done
done

echo
awk -F'\t' '
	{ k = $3 SUBSEP $2; v = $4
	  if (v == "HANG") { hang[k] = 1; next }
	  v += 0; if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v; tg[$2] = 1 }
	function cell(r, t,   k) { k = r SUBSEP t; if (k in hang) return "HANG"; if (!(k in lo)) return "-"
				     return lo[k] == hi[k] ? lo[k] : lo[k] "-" hi[k] }
	END {
		n = split("ext4 local0 local rados0 rados cephfuse", order, " ")
		hdr = "TABLE row"; for (i = 1; i <= n; i++) if (order[i] in tg) hdr = hdr " | " order[i]; print hdr
		split("fsstress dirsync-busy dirsync-idle", rows, " ")
		unit["fsstress"] = " ops/s"; unit["dirsync-busy"] = " us"; unit["dirsync-idle"] = " us"
		for (j = 1; j <= 3; j++) {
			line = "TABLE " rows[j] unit[rows[j]]
			for (i = 1; i <= n; i++) if (order[i] in tg) line = line " | " cell(rows[j], order[i])
			print line
		}
	}' "$work/results"
