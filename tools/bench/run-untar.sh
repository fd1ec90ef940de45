#!/usr/bin/env bash
# run-untar.sh - issue 13's small-file rows side by side in one run: tar -x of
# /usr/include, rm -rf of it, and creates per second from one thread, on ext4
# (a loop device made here), loligo on the local store, and, given a Ceph
# cluster, loligo on RADOS and ceph-fuse on that same cluster.
#
#   tools/bench/run-untar.sh [--build DIR] [--ceph DIR | --ceph-start] [--runs N]
#                            [--creates N] [--src DIR] [--targets LIST] [--compare DIR]
#                            [--tsv FILE] [--profile] [--keep]
#
#   --build DIR     build tree with loligo-mds, loligo-fuse, loligo, creates
#                   (default: $LOLIGO_BUILD_DIR, else ./build)
#   --ceph DIR      a running cluster made by
#                   CEPH_PORT=<free> CEPH_MDS=1 ../shared/ceph/start-cluster.sh DIR:
#                   adds loligo on RADOS (its own pools, removed at the end)
#                   and ceph-fuse (../shared/ceph/mount-cephfs.sh, in a
#                   directory of its own in CephFS "cephfs")
#   --ceph-start    start such a cluster in the temp dir (stopped at the end)
#   --runs N        every target N times, alternating (default 1)
#   --creates N     files of the creates rows (default 2000)
#   --src DIR       the tree the untar rows extract (default /usr/include)
#   --targets LIST  comma-separated subset of ext4,local,local0,rados0,rados,cephfuse
#   --compare DIR   also local0 (and rados0 with a cluster): loligo with the
#                   binaries of build tree DIR (main before a change), in the
#                   same runs, alternating; the table gets columns for them
#   --tsv FILE      append one line per (run, target, row): run target row
#                   secs ops ops_s client_cpu_s mds_requests load1
#   --profile       during the local target's tar -x of run 1: strace -c -f of
#                   loligo-fuse and of loligo-mds (syscall counts and times)
#                   and strace -c -w of tar (the wall time of its syscalls:
#                   which of them wait); slows that row; keeps the temp dir
#   --keep          keep the temp dir (logs, per-row MDS counters)
#
# Rows, each on a fresh mount of an empty filesystem (ext4: a 4 GiB sparse
# file on the temp dir's disk, mkfs.ext4, a loop device):
#   untar       tar -xf of a tarball of /usr/include made once in the temp dir
#               (ops = the tarball's entries), seconds
#   rm-rf       rm -rf of that tree (ops = the same entries), seconds
#   create      tools/bench/creates DIR N: open(O_CREAT|O_EXCL)+close, ops/s
#   create-untar  creates --untar: + write 1-4 KiB, futimens, fchown, fchmod
#               (what GNU tar -x does per file as root), ops/s
#   unlink      creates --unlink: unlinkat of the create-untar files, ops/s
# Every measurement prints how long it took, how many ops, the client's CPU
# seconds, the MDS requests it caused (loligo: the MDS's perf dump) and the
# load average.  The last lines are the table, min-max over the runs:
#   TABLE row | ext4 | loligo local | local / ext4 | ... | RADOS vs ceph-fuse
# "x ext4" is the time ratio (2.0x = twice ext4's time); "speed vs ceph-fuse"
# is ceph-fuse's time over loligo's (above 1: loligo is faster).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-untar bench_fs=untarbench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
ncreates=2000 profile=0 src=/usr/include
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--creates) ncreates=$2; shift ;;
	--src) src=$(cd "$2" 2>/dev/null && pwd) || bench_usage "--src $2: no such directory"; shift ;;
	--profile) profile=1 keep=1 ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
[[ $ncreates =~ ^[1-9][0-9]*$ ]] || bench_usage "--creates takes a positive number"
bench_need tar jq fusermount3 mkfs.ext4 losetup
((profile)) && bench_need strace
[[ $(id -u) == 0 ]] || { echo "run-untar: needs root (loop device, mounts)" >&2; exit 1; }
creates=$build/tools/bench/creates
[[ -x $creates ]] || { echo "run-untar: no $creates (ninja -C $build creates)" >&2; exit 1; }

bench_workdir
loopdev= ext4_mnt=$work/ext4.mnt cephfs_dir=
cleanup() {
	set +e
	trap '' INT TERM   # a second signal must not cut the cleanup short
	# the workload first: nothing may keep a mount busy
	bench_stop_workload
	[[ -n ${strace_pids:-} ]] && { kill -INT $strace_pids 2>/dev/null; wait $strace_pids 2>/dev/null; }
	if [[ -n $cephfs_dir ]] && mountpoint -q "$ceph_mnt"; then rm -rf "${ceph_mnt:?}/$cephfs_dir"; fi
	bench_cleanup
	mountpoint -q "$ext4_mnt" && { umount "$ext4_mnt" || umount -l "$ext4_mnt"; }
	[[ -n $loopdev ]] && losetup -d "$loopdev"
	if ((keep)); then echo "run-untar: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

((ceph_start)) && bench_ceph_start
all_targets=ext4,local
[[ -n $compare ]] && all_targets=ext4,local0,local
[[ -n $ceph_dir ]] && all_targets=$all_targets,rados,cephfuse
[[ -n $ceph_dir && -n $compare ]] && all_targets=${all_targets/,rados,/,rados0,rados,}
targets=${targets:-$all_targets}

# the tarball, once: its entries and bytes
tarball=$work/src.tar
tar -cf "$tarball" -C "$(dirname "$src")" "$(basename "$src")" 2>"$work/tar-c.err" ||
	{ echo "run-untar: tar -c of $src failed:" >&2; tail -3 "$work/tar-c.err" >&2; exit 1; }
read -r t_files t_dirs t_other t_bytes < <(tar -tvf "$tarball" | awk '
	{ t = substr($1, 1, 1); if (t == "-") { f++; b += $3 } else if (t == "d") d++; else o++ }
	END { printf "%d %d %d %d\n", f, d, o, b }')
t_entries=$((t_files + t_dirs + t_other))

ext4_setup() {
	truncate -s 4G "$work/ext4.img"
	mkfs.ext4 -q -F "$work/ext4.img" >"$work/mkfs.out" 2>&1 || { echo "run-untar: mkfs.ext4:" >&2; cat "$work/mkfs.out" >&2; exit 1; }
	loopdev=$(losetup -f --show "$work/ext4.img") || { echo "run-untar: losetup failed" >&2; exit 1; }
	mkdir -p "$ext4_mnt"
}
dir_of() { # the directory a target's rows work in
	case $1 in
	ext4) echo "$ext4_mnt" ;;
	cephfuse) echo "$ceph_mnt/untarbench$$" ;;
	*) mnt_of "$1" ;;
	esac
}
client_pid_of() { [[ $1 == ext4 ]] || echo "${fuse_pid[$1]:-}"; }
mds_perf() { # TARGET -> the MDS's perf dump (JSON) or nothing
	[[ $1 == ext4 || $1 == cephfuse ]] && return 0
	"$cli" -f json daemon "$work/$1-mds.asok" perf dump 2>/dev/null || true
}
mds_requests() { jq -r '.mds.requests // 0' 2>/dev/null || echo 0; }
client_perf() { # TARGET -> loligo-fuse's perf dump (JSON) or nothing
	[[ $1 == ext4 || $1 == cephfuse ]] && return 0
	"$cli" -f json daemon "$work/$1-client.asok" perf dump 2>/dev/null || true
}

# measure RUN TARGET ROW OPS CMD...: time CMD, one line in $work/results
measure() {
	local run=$1 t=$2 row=$3 ops=$4 pid c0 c1 p0 p1 q0 q1 t0 t1 secs out=$work/$2.$3.$1.out
	shift 4
	pid=$(client_pid_of "$t")
	c0=$([[ -n $pid ]] && cpu_of "$pid" || echo 0)
	p0=$(mds_perf "$t")
	q0=$(client_perf "$t")
	t0=$EPOCHREALTIME
	bg_run "$@" >"$out" 2>&1 || { echo "run-untar: $row on $t failed:" >&2; tail -5 "$out" >&2; exit 1; }
	t1=$EPOCHREALTIME
	c1=$([[ -n $pid ]] && cpu_of "$pid" || echo 0)
	p1=$(mds_perf "$t")
	q1=$(client_perf "$t")
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	# creates measures itself (no fork/exec in the time): take its seconds
	if grep -q '^RESULT ' "$out"; then
		secs=$(sed -n 's/^RESULT op=.* secs=\([0-9.]*\) .*/\1/p' "$out" | tail -1)
	fi
	local reqs=- load ops_s
	if [[ -n $p0 && -n $p1 ]]; then
		reqs=$(( $(mds_requests <<<"$p1") - $(mds_requests <<<"$p0") ))
		# requests per op type over the row, for "where the time goes"
		# and their mean time in the MDS: "create=9032 (85 us)"
		jq -n --argjson a "$p0" --argjson b "$p1" -r '
			[$b.mds | to_entries[] | select(.key | test("^op_[a-z_]+$")) | select(.key | endswith("_lat") | not)
			 | .key as $k | {k: $k, n: (.value - ($a.mds[$k] // 0)),
			   ns: ($b.mds[$k + "_lat"].sum_ns - ($a.mds[$k + "_lat"].sum_ns // 0))} | select(.n > 0)]
			| map("\(.k | ltrimstr("op_"))=\(.n) (\(.ns / .n / 1000 | floor) us)") | join(" ")' \
			>"$work/$t.$row.$run.mdsops" 2>/dev/null || true
	fi
	if [[ -n $q0 && -n $q1 ]]; then
		# what the client waited for: the MDS round trip (first reply) and
		# the journal commit (safe reply), mean over the row
		jq -n --argjson a "$q0" --argjson b "$q1" -r '
			def d(f): ($b | f) - (($a | f) // 0);
			def mean(h): (d(.mds_client[h].sum_ns) / ([d(.mds_client[h].count), 1] | max) / 1000 | floor);
			"client: \(d(.mds_client.requests_sent)) requests sent, first reply \(mean("lat_first_reply")) us," +
			" safe \(mean("lat_safe")) us (mean)"' >"$work/$t.$row.$run.client" 2>/dev/null || true
	fi
	load=$(cut -d' ' -f1 /proc/loadavg)
	ops_s=$(awk -v n="$ops" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
	local cpu=-
	[[ -n $pid ]] && cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
	local line="$run	$t	$row	$secs	$ops	$ops_s	$cpu	$reqs	$load"
	echo "$line" >>"$work/results"
	[[ -n $tsv ]] && echo "$line" >>"$tsv"
	printf 'run %s  %-8s %-12s %8ss %7s ops %7s ops/s  client CPU %6ss  MDS requests %6s  load %s\n' \
		"$run" "$t" "$row" "$secs" "$ops" "$ops_s" "$cpu" "$reqs" "$load"
	if [[ -s $work/$t.$row.$run.mdsops ]]; then echo "    MDS ops: $(cat "$work/$t.$row.$run.mdsops")"; fi
	if [[ -s $work/$t.$row.$run.client ]]; then echo "    $(cat "$work/$t.$row.$run.client")"; fi
	return 0
}

# --profile: strace -c -f of the client and the MDS around one command
profile_start() { # TARGET
	local t=$1
	strace_pids=
	strace -c -f -q -o "$work/strace.$t.fuse.txt" -p "${fuse_pid[$t]}" 2>/dev/null &
	strace_pids=$!
	strace -c -f -q -o "$work/strace.$t.mds.txt" -p "${mds_pid[$t]}" 2>/dev/null &
	strace_pids="$strace_pids $!"
	sleep 1   # strace attaches every thread before the command starts
}
profile_done() { # TARGET
	kill -INT $strace_pids 2>/dev/null; wait $strace_pids 2>/dev/null || true
	strace_pids=
	echo "    profile: $work/strace.$1.{tar,fuse,mds}.txt"
}

run_target() { # RUN TARGET
	local run=$1 t=$2 d
	mount_row_target "$t"
	d=$(dir_of "$t")
	mkdir "$d/u"
	local prof=0
	((profile && run == 1)) && [[ $t == local ]] && prof=1
	if ((prof)); then
		profile_start "$t"
		# and tar itself: the wall time of each of its syscalls (-w)
		measure "$run" "$t" untar "$t_entries" strace -f -c -w -q -o "$work/strace.$t.tar.txt" tar -xf "$tarball" -C "$d/u"
		profile_done "$t"
	else
		measure "$run" "$t" untar "$t_entries" tar -xf "$tarball" -C "$d/u"
	fi
	measure "$run" "$t" rm-rf "$t_entries" rm -rf "$d/u"
	mkdir "$d/c"
	measure "$run" "$t" create "$ncreates" "$creates" "$d/c" "$ncreates"
	rm -rf "$d/c"
	mkdir "$d/cu"
	measure "$run" "$t" create-untar "$ncreates" "$creates" --untar "$d/cu" "$ncreates"
	measure "$run" "$t" unlink "$ncreates" "$creates" --unlink "$d/cu" "$ncreates"
	rmdir "$d/cu"
	umount_row_target "$t"
}

echo "== run-untar: $(nproc) CPUs, kernel $(uname -r), $(tar --version | head -1), targets $targets, runs $runs," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== tarball of $src: $t_entries entries ($t_files files, $t_dirs directories, $t_other other)," \
	"$t_bytes bytes in files ($(numfmt --to=iec "$t_bytes")B); creates rows: $ncreates files"
[[ -n $compare ]] && echo "== local0/rados0: loligo built from $compare_label ($compare)"
[[ -n $ceph_dir ]] && echo "== ceph: $ceph_dir ($(ceph-fuse --version 2>/dev/null | head -1))"
IFS=, read -ra tl <<<"$targets"
for t in "${tl[@]}"; do
	case $t in
	ext4) ext4_setup ;;
	local) loligo_setup "$t" ;;
	local0) [[ -n $compare ]] || { echo "run-untar: local0 needs --compare DIR" >&2; exit 2; }
		loligo_setup "$t" ;;
	rados|rados0) [[ -n $ceph_dir ]] || { echo "run-untar: $t needs --ceph DIR or --ceph-start" >&2; exit 2; }
		[[ $t == rados || -n $compare ]] || { echo "run-untar: rados0 needs --compare DIR" >&2; exit 2; }
		loligo_setup "$t" ;;
	cephfuse) [[ -n $ceph_dir ]] || { echo "run-untar: cephfuse needs --ceph DIR or --ceph-start" >&2; exit 2; } ;;
	*) echo "run-untar: unknown target $t" >&2; exit 2 ;;
	esac
done
for run in $(seq 1 "$runs"); do
	for t in "${tl[@]}"; do run_target "$run" "$t"; done
done

# the table: min-max over the runs; ratios per run (same run, same load)
echo
awk -F'\t' -v compare="$compare_label" -v src="$src" -v ops="$t_entries entries, $(numfmt --to=iec "$t_bytes")B" -v n="$ncreates" '
	{ k = $3 SUBSEP $2; v = ($3 == "untar" || $3 == "rm-rf") ? $4 + 0 : $6 + 0
	  if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v
	  rate[$1 SUBSEP $2 SUBSEP $3] = $6 + 0; runs[$1] = 1; rows[$3] = 1; tgt[$2] = 1
	  if (!($3 in llo) || $9 < llo[$3]) llo[$3] = $9; if (!($3 in lhi) || $9 > lhi[$3]) lhi[$3] = $9 }
	function range(a, b) { return a == b ? a : a "-" b }
	function cell(r, t,   k) { k = r SUBSEP t; if (!(k in lo)) return "-"; return range(lo[k], hi[k]) }
	# rate(ta) / rate(tb) per run, min-max: the speed of ta relative to tb
	function ratio(r, ta, tb,   x, a, b, q, rlo, rhi) {
		rlo = ""; rhi = ""
		for (x in runs) {
			a = rate[x SUBSEP ta SUBSEP r]; b = rate[x SUBSEP tb SUBSEP r]
			if (a == "" || b == "" || a == 0 || b == 0) continue
			q = a / b; if (rlo == "" || q < rlo) rlo = q; if (rhi == "" || q > rhi) rhi = q
		}
		if (rlo == "") return "-"
		return sprintf("%.2f", rlo) == sprintf("%.2f", rhi) ? sprintf("%.2fx", rlo) : sprintf("%.2f-%.2fx", rlo, rhi)
	}
	function col(name, text) { if (name in tgt) { hdr = hdr " " text " |"; ncol++ } }
	END {
		split("untar rm-rf create create-untar unlink", order, " ")
		label["untar"] = "tar -x of " src " (" ops "), s"
		label["rm-rf"] = "rm -rf of it, s"
		label["create"] = "creates/s, 1 thread (" n " x open O_EXCL+close)"
		label["create-untar"] = "same + write 1-4 KiB, futimens, fchown, fchmod (as tar), /s"
		label["unlink"] = "unlinks/s of those, 1 thread"
		hdr = "TABLE | row |"; ncol = 0
		col("ext4", "ext4 (loop)"); col("local0", "loligo local, " compare)
		col("local", "loligo local"); col("rados0", "loligo RADOS, " compare)
		col("rados", "loligo RADOS"); col("cephfuse", "ceph-fuse")
		if ("local" in tgt && "ext4" in tgt) { hdr = hdr " local: x ext4 time |"; ncol++ }
		if ("local" in tgt && "local0" in tgt) { hdr = hdr " local speed vs " compare " |"; ncol++ }
		if ("rados" in tgt && "ext4" in tgt) { hdr = hdr " RADOS: x ext4 time |"; ncol++ }
		if ("rados" in tgt && "cephfuse" in tgt) { hdr = hdr " RADOS speed vs ceph-fuse |"; ncol++ }
		if ("rados" in tgt && "rados0" in tgt) { hdr = hdr " RADOS speed vs " compare " |"; ncol++ }
		print hdr " load |"
		sep = "TABLE |---|"; for (i = 0; i <= ncol; i++) sep = sep "---|"; print sep
		for (i = 1; i <= 5; i++) {
			r = order[i]; if (!(r in rows)) continue
			line = "TABLE | " label[r] " |"
			split("ext4 local0 local rados0 rados cephfuse", tt, " ")
			for (j = 1; j <= 6; j++) if (tt[j] in tgt) line = line " " cell(r, tt[j]) " |"
			if ("local" in tgt && "ext4" in tgt) line = line " " ratio(r, "ext4", "local") " |"
			if ("local" in tgt && "local0" in tgt) line = line " " ratio(r, "local", "local0") " |"
			if ("rados" in tgt && "ext4" in tgt) line = line " " ratio(r, "ext4", "rados") " |"
			if ("rados" in tgt && "cephfuse" in tgt) line = line " " ratio(r, "rados", "cephfuse") " |"
			if ("rados" in tgt && "rados0" in tgt) line = line " " ratio(r, "rados", "rados0") " |"
			print line " " range(llo[r], lhi[r]) " |"
		}
	}' "$work/results"
echo "== load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
