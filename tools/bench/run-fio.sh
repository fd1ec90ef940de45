#!/usr/bin/env bash
# run-fio.sh - file data throughput of loligo-fuse, and of ceph-fuse on the
# same Ceph cluster in the same run, measured with fio (issue 13's table).
#
#   tools/bench/run-fio.sh [--build DIR] [--ceph DIR | --ceph-start] [--runs N]
#                          [--size4k SIZE] [--size1m SIZE] [--runtime S]
#                          [--targets LIST] [--tsv FILE] [--plot FILE.png]
#                          [--mounts 2] [--perf] [--compare DIR] [--rows LIST] [--keep]
#
#   --build DIR     build tree with loligo-mds, loligo-fuse, loligo
#                   (default: $LOLIGO_BUILD_DIR, else ./build)
#   --ceph DIR      a running cluster made by ../shared/ceph/start-cluster.sh
#                   with CEPH_MDS=1: adds loligo on RADOS (its own pools,
#                   fs_name fiobench<pid>) and ceph-fuse (CephFS "cephfs",
#                   ../shared/ceph/mount-cephfs.sh), and the ratio between them
#   --ceph-start    start such a cluster in the temp dir on a free port (and
#                   stop it at the end): memstore OSD, CEPH_MDS=1
#   --runs N        run every target N times, alternating (default 1): the
#                   machine is shared, compare within one run and give ranges
#   --size4k SIZE   file size of each of the 4 jobs of the 4 KiB rows (256M)
#   --size1m SIZE   file size of the 1 MiB rows (1G)
#   --runtime S     at most S seconds per 4 KiB row (30)
#   --targets LIST  comma-separated subset of local,rados,cephfuse (all there are)
#   --tsv FILE      append one line per (run, target, job): run target job
#                   mib_s iops client_cpu_s load1 (for plot-fio.sh)
#   --plot FILE     draw the table as a PNG (tools/bench/plot-fio.sh, gnuplot)
#   --mounts 2      also: two loligo-fuse mounts of the local store writing at once
#   --perf          profile the client during the read rows: perf record -g
#                   of loligo-fuse/ceph-fuse (perf.T.JOB.RUN.{data,txt}: the
#                   report's top), the client's counters (loligo: perf dump
#                   of its admin socket; ceph-fuse: of its objecter) and the
#                   OSD's op_r/op_w latency over the job and the ops in flight
#                   there on average (osd.T.JOB.RUN.txt; rados bench's too);
#                   keeps the temp dir
#   --perf-jobs GLOB  the rows --perf profiles (default *read*; say randwrite-4k)
#                   (LOLIGO_BENCH_PERF_CG=dwarf: call graphs through libc and
#                   librados, which have no frame pointers; default fp)
#   --compare DIR   also target "rados0": loligo on RADOS with the binaries
#                   of build tree DIR (say, main before a change), in the same
#                   runs, alternating; the table gets a column for it
#   --rows LIST     comma-separated subset of the rows below (all)
#   --keep          keep the temp dir (logs, fio JSON)
#   --no-rados-bench  with a cluster: skip the rados bench rows (below)
#
# Rows (jobs in tools/bench/fio/, buffered I/O; "remount" = a fresh client,
# so reads start with cold client caches and an empty kernel page cache):
#   randwrite-4k        4 jobs x SIZE4K, 4 KiB random writes, libaio iodepth 16
#   randwrite-4k-fsync  the same with an fsync at the end of each job
#   randread-4k         4 KiB random reads of 4 files laid out before, remount
#   seqwrite-1m         1 MiB writes of one SIZE1M file
#   seqwrite-1m-fsync   the same with an fsync at the end
#   seqread-1m          1 MiB reads of that file, remount
# For every target and row: MiB/s, IOPS, and the CPU seconds the client
# process (loligo-fuse or ceph-fuse) used.
#
# With a cluster, every run also measures the ceiling of any client's data
# path on it: `rados bench` in the data pool of the rados target (or a pool
# of its own), with loligo's object size (4 MiB) and rados bench's default
# 16 ops in flight, over as many objects as the 1 MiB rows write
# (--max-objects SIZE1M / 4 MiB):
#   write (no cleanup)   beside seqwrite-1m and seqwrite-1m-fsync
#   seq                  beside seqread-1m
#   rand                 4 MiB random object reads, its own row
# The last lines are the table:
#   TABLE row | local | rados | ceph-fuse | rados/ceph-fuse | rados bench |
#         rados/rados bench (min-max over runs; ratios from the same run)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-fio bench_fs=fiobench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
size4k=256M size1m=1G runtime=30 mounts=1 perf=0 perf_jobs='*read*' plot= radosbench=1
rows=randwrite-4k,randwrite-4k-fsync,randread-4k,seqwrite-1m,seqwrite-1m-fsync,seqread-1m
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--size4k) size4k=$2; shift ;;
	--size1m) size1m=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--plot) plot=$2; shift ;;
	--mounts) mounts=$2; shift ;;
	--perf) perf=1 keep=1 ;;
	--perf-jobs) perf_jobs=$2; shift ;;
	--rows) rows=$2; shift ;;
	--no-rados-bench) radosbench=0 ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
bench_need fio jq fusermount3
jobs_dir=$here/fio

bench_workdir
cleanup() {
	bench_cleanup
	if ((keep)); then echo "run-fio: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

((ceph_start)) && bench_ceph_start
all_targets=local
[[ -n $ceph_dir ]] && all_targets=local,rados,cephfuse
[[ -n $ceph_dir && -n $compare ]] && all_targets=local,rados0,rados,cephfuse
targets=${targets:-$all_targets}

# the OSD's ops so far: "count sum_seconds" of op_r_latency and of
# op_w_latency
osd_latency() {
	ceph -c "$ceph_dir/ceph.conf" daemon osd.0 perf dump osd 2>/dev/null |
		jq -r '.osd | "\(.op_r_latency.avgcount) \(.op_r_latency.sum) \(.op_w_latency.avgcount) \(.op_w_latency.sum)"' \
			2>/dev/null || echo "0 0 0 0"
}
# osd_inflight BEFORE AFTER SECONDS (BEFORE, AFTER: osd_latency around a job
# of SECONDS): per kind of op, how many, their mean latency at the OSD and
# how many were in flight there on average over the job (Little: the
# latencies' sum / the wall time) - what a client keeps in flight, to
# compare with rados bench's 16 objects
osd_inflight() {
	echo "$1 $2 $3" | awk '{ t = $9
		for (k = 0; k < 2; k++) { n = $(5 + 2 * k) - $(1 + 2 * k); s = $(6 + 2 * k) - $(2 + 2 * k)
			kind = k ? "op_w" : "op_r"; f = t > 0 ? s / t : 0
			if (n > 0) printf "osd.0 %s: %d ops, mean latency %.1f ms, %.1f in flight; ", kind, n, s / n * 1000, f } }'
}
# --perf, after a read job: stop perf, keep the top of its report, the
# client's counters and the OSD's mean read latency over the job
profile_done() { # RUN TARGET JOB PERF_PID OSD_BEFORE SECONDS
	local run=$1 t=$2 job=$3 p=$4 base=$work/perf.$2.$3.$1
	kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null || true
	perf report -i "$base.data" --no-children --percent-limit 1.5 --stdio -g none --sort comm,dso,sym 2>/dev/null |
		grep -v '^$' | head -60 >"$base.txt" || true
	if [[ $t == cephfuse ]]; then
		local asok
		asok=$(ls "$ceph_dir"/run/fuse.*.asok 2>/dev/null | head -1)
		[[ -n $asok ]] && ceph --admin-daemon "$asok" perf dump >"$work/$t.$job.$run.counters.json" 2>/dev/null
	else
		"$cli" -f json daemon "$work/$t-client.asok" perf dump >"$work/$t.$job.$run.counters.json" 2>/dev/null || true
	fi
	if [[ -n $5 ]]; then
		osd_inflight "$5" "$(osd_latency)" "$6" >"$work/osd.$t.$job.$run.txt"
	fi
}

# run_job RUN TARGET JOB: fio, then one line in $work/results
run_job() {
	local run=$1 t=$2 job=$3 dir pid c0 c1 out=$work/$2.$3.$1.json
	dir=$(mnt_of "$t")
	pid=${fuse_pid[$t]}
	c0=$(cpu_of "$pid")
	local prof= osd0=
	# shellcheck disable=SC2053  # a glob on purpose
	if ((perf)) && [[ $job == $perf_jobs ]]; then
		perf record -q -F 499 --call-graph "${LOLIGO_BENCH_PERF_CG:-fp}" -p "$pid" -o "$work/perf.$t.$job.$run.data" >/dev/null 2>&1 &
		prof=$!
		[[ -n $ceph_dir ]] && osd0=$(osd_latency)
	fi
	local t0=$EPOCHREALTIME
	FIO_DIR=$dir FIO_SIZE4K=$size4k FIO_SIZE1M=$size1m FIO_RUNTIME=$runtime \
		bg_run fio --output-format=json "$jobs_dir/$job.fio" >"$out" 2>"$work/$t.$job.$run.err" ||
		{ echo "run-fio: fio $job on $t failed:" >&2; tail -5 "$work/$t.$job.$run.err" >&2; exit 1; }
	local secs
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
	c1=$(cpu_of "$pid")
	[[ -n $prof ]] && profile_done "$run" "$t" "$job" "$prof" "$osd0" "$secs"
	local line
	line=$(jq -r --arg run "$run" --arg t "$t" --arg job "$job" --arg cpu "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')" \
		--arg load "$(cut -d' ' -f1 /proc/loadavg)" '
		.jobs[0] as $j | (if ($job | test("read")) then $j.read else $j.write end) as $d
		| "\($run)\t\($t)\t\($job)\t\($d.bw_bytes / 1048576 * 10 | floor / 10)\t\($d.iops | floor)\t\($cpu)\t\($load)"' "$out")
	echo "$line" >>"$work/results"
	[[ -n $tsv ]] && echo "$line" >>"$tsv"
	printf 'run %s  %-9s %-19s %8s MiB/s %8s IOPS  client CPU %6ss  load %s\n' $line
	[[ -n $prof ]] && echo "    profile: $work/perf.$t.$job.$run.txt${osd0:+; $(cat "$work/osd.$t.$job.$run.txt")}"
	return 0
}

row() { [[ ,$rows, == *,$1,* ]]; }

# rados bench RUN: the cluster's own ceiling, one line per mode in
# $work/results as target "radosbench" (write -> the seqwrite rows, seq ->
# seqread-1m, rand -> its own row)
rb_pool=
radosbench_pool() {
	if [[ ,$targets, == *,rados,* ]]; then
		rb_pool=$(fs_name_of rados)_data
	else
		rb_pool=radosbench$$
		ceph -c "$ceph_dir/ceph.conf" osd pool create "$rb_pool" 8 >/dev/null 2>&1 ||
			{ echo "run-fio: cannot create pool $rb_pool" >&2; exit 1; }
		ceph -c "$ceph_dir/ceph.conf" osd pool set "$rb_pool" size 1 --yes-i-really-mean-it >/dev/null 2>&1 || true
	fi
}
# children_cpu FILE (the output of `times`): the CPU seconds (user + system)
# of the children waited for so far
children_cpu() {
	awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; print t }' "$1"
}
run_radosbench() { # RUN
	local run=$1 mode job out objs secs line
	objs=$(( ($(numfmt --from=iec "$size1m") + 4194303) / 4194304 ))
	secs=$(( runtime > 60 ? runtime : 60 ))   # an upper bound: --max-objects ends the write
	for mode in write seq rand; do
		case $mode in
		write) job=seqwrite-1m ;;
		seq) job=seqread-1m ;;
		rand) job=rand-4m ;;
		esac
		out=$work/radosbench.$mode.$run.txt
		local extra=(-t 16)
		[[ $mode == write ]] && extra+=(-b 4194304 -O 4194304 --max-objects "$objs" --no-cleanup)
		[[ $mode == rand ]] && secs=$runtime
		local osd0='' t0 t1
		((perf)) && osd0=$(osd_latency)
		# its CPU, as the loligo rows': the children the shell waited for,
		# before and after (`times` in this shell, not in a $(...) one)
		times >"$work/times.0"
		t0=$EPOCHREALTIME
		bg_run rados -c "$ceph_dir/ceph.conf" -p "$rb_pool" bench "$secs" "$mode" "${extra[@]}" \
			--run-name "runfio$$" >"$out" 2>&1 ||
			{ echo "run-fio: rados bench $mode failed:" >&2; tail -5 "$out" >&2; exit 1; }
		t1=$EPOCHREALTIME
		times >"$work/times.1"
		line=$(awk -v run="$run" -v job="$job" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
			-v cpu="$(children_cpu "$work/times.1") $(children_cpu "$work/times.0")" '
			/^Bandwidth \(MB\/sec\):/ { bw = $3 } /^Average IOPS:/ { iops = $3 }
			END { if (bw == "") exit 1; split(cpu, c, " ")
				printf "%s\tradosbench\t%s\t%.1f\t%d\t%.2f\t%s", run, job, bw, iops, c[1] - c[2], load }' "$out") ||
			{ echo "run-fio: no result in rados bench $mode output ($out)" >&2; exit 1; }
		echo "$line" >>"$work/results"
		[[ $mode == write ]] && echo "${line/seqwrite-1m/seqwrite-1m-fsync}" >>"$work/results"
		[[ -n $tsv ]] && echo "$line" >>"$tsv"
		printf 'run %s  %-9s %-19s %8s MiB/s %8s IOPS  client CPU %6ss  load %s\n' $line
		if ((perf)); then
			osd_inflight "$osd0" "$(osd_latency)" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
				>"$work/osd.radosbench.$mode.$run.txt"
			echo "    $(cat "$work/osd.radosbench.$mode.$run.txt")"
		fi
	done
	rados -c "$ceph_dir/ceph.conf" -p "$rb_pool" cleanup --run-name "runfio$$" >/dev/null 2>&1 || true
}
run_target() { # RUN TARGET
	local run=$1 t=$2 m
	m=$(mnt_of "$t")
	mount_target "$t"
	row randwrite-4k && run_job "$run" "$t" randwrite-4k
	row randwrite-4k-fsync && run_job "$run" "$t" randwrite-4k-fsync
	if row randread-4k; then
		FIO_DIR=$m FIO_SIZE4K=$size4k bg_run fio --output-format=json "$jobs_dir/layout-4k.fio" >"$work/$t.layout.json"
		umount_target "$t"; mount_target "$t"
		run_job "$run" "$t" randread-4k
	fi
	row seqwrite-1m && run_job "$run" "$t" seqwrite-1m
	row seqwrite-1m-fsync && run_job "$run" "$t" seqwrite-1m-fsync
	if row seqread-1m; then
		if ! row seqwrite-1m && ! row seqwrite-1m-fsync; then   # lay out the file it reads
			FIO_DIR=$m FIO_SIZE1M=$size1m bg_run fio --output-format=json "$jobs_dir/seqwrite-1m-fsync.fio" >"$work/$t.layout1m.json"
		fi
		umount_target "$t"; mount_target "$t"
		run_job "$run" "$t" seqread-1m
	fi
	rm -f "$m"/rw4k.* "$m"/rr4k.* "$m"/seq1m.*
	umount_target "$t"
}

echo "== run-fio: $(nproc) CPUs, kernel $(uname -r), fio $(fio --version), targets $targets, runs $runs," \
	"4 KiB rows 4 x $size4k (<= ${runtime}s), 1 MiB rows $size1m, load $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n $compare ]] && echo "== rados0: loligo on RADOS built from $compare_label ($compare)"
[[ -n $ceph_dir ]] && echo "== ceph: $ceph_dir ($(ceph-fuse --version 2>/dev/null | head -1))"
IFS=, read -ra tl <<<"$targets"
for t in "${tl[@]}"; do
	case $t in
	local|rados) loligo_setup "$t" ;;
	rados0) [[ -n $compare && -n $ceph_dir ]] || { echo "run-fio: rados0 needs --compare DIR and a cluster" >&2; exit 2; }
		loligo_setup "$t" ;;
	cephfuse) [[ -n $ceph_dir ]] || { echo "run-fio: cephfuse needs --ceph DIR or --ceph-start" >&2; exit 2; } ;;
	*) echo "run-fio: unknown target $t" >&2; exit 2 ;;
	esac
done
((radosbench)) && [[ -n $ceph_dir ]] && radosbench_pool
for run in $(seq 1 "$runs"); do
	for t in "${tl[@]}"; do run_target "$run" "$t"; done
	((radosbench)) && [[ -n $ceph_dir ]] && run_radosbench "$run"
done
if [[ $rb_pool == radosbench$$ ]]; then
	ceph -c "$ceph_dir/ceph.conf" osd pool rm "$rb_pool" "$rb_pool" --yes-i-really-really-mean-it >/dev/null 2>&1 || true
fi

if ((mounts >= 2)) && [[ ,$targets, == *,local,* ]]; then
	loligo_mount local
	loligo_mount local "$work/local2.mnt"
	half=$(( $(numfmt --from=iec "$size1m") / 2 ))
	bg_run fio --output-format=json --ioengine=psync --rw=write --bs=1M --size="$half" --end_fsync=1 \
		--name=m1 --directory="$work/local.mnt" --name=m2 --directory="$work/local2.mnt" >"$work/two-mounts.json"
	echo "two mounts of the local store writing at once: $(jq '[.jobs[].write.bw_bytes] | add / 1048576 | floor' "$work/two-mounts.json") MiB/s in total"
	unmount "$work/local2.mnt" "$fuse2_pid"
	umount_target local
fi

# the table: min-max over the runs, and the ratios from the same run
echo
awk -F'\t' -v compare="$compare_label" '
	{ k = $3 SUBSEP $2; v = $4 + 0
	  if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v
	  val[$1 SUBSEP $2 SUBSEP $3] = v; runs[$1] = 1; jobs[$3] = 1; tgt[$2] = 1 }
	function cell(j, t) { k = j SUBSEP t; if (!(k in lo)) return "-"; return lo[k] == hi[k] ? lo[k] : lo[k] "-" hi[k] }
	function ratio(j, ta, tb,   r, a, b, q, rlo, rhi) { # ta / tb per run: min-max
		rlo = ""; rhi = ""
		for (r in runs) {
			a = val[r SUBSEP ta SUBSEP j]; b = val[r SUBSEP tb SUBSEP j]
			if (a == "" || b == "" || b == 0) continue
			q = a / b; if (rlo == "" || q < rlo) rlo = q; if (rhi == "" || q > rhi) rhi = q
		}
		return rlo == "" ? "-" : (sprintf("%.2f", rlo) == sprintf("%.2f", rhi) ? sprintf("%.2fx", rlo) : sprintf("%.2f-%.2fx", rlo, rhi))
	}
	END {
		n = split("randwrite-4k randwrite-4k-fsync randread-4k seqwrite-1m seqwrite-1m-fsync seqread-1m rand-4m", order, " ")
		c0 = ("rados0" in tgt)
		rb = ("radosbench" in tgt)
		printf "TABLE | fio (MiB/s) | loligo, local store |%s loligo on RADOS | ceph-fuse | RADOS / ceph-fuse |%s%s\n",
			c0 ? " loligo on RADOS, " compare " |" : "", c0 ? " RADOS / " compare " |" : "",
			rb ? " rados bench | RADOS / rados bench | ceph-fuse / rados bench |" : ""
		printf "TABLE |---|---|---|---|---|%s%s\n", c0 ? "---|---|" : "", rb ? "---|---|---|" : ""
		for (i = 1; i <= n; i++) {
			j = order[i]; if (!(j in jobs)) continue
			printf "TABLE | %s | %s |%s %s | %s | %s |%s%s\n", j == "rand-4m" ? "rand-4m (rados bench rand)" : j,
				cell(j, "local"), c0 ? " " cell(j, "rados0") " |" : "",
				cell(j, "rados"), cell(j, "cephfuse"), ratio(j, "rados", "cephfuse"),
				c0 ? " " ratio(j, "rados", "rados0") " |" : "",
				rb ? " " cell(j, "radosbench") " | " ratio(j, "rados", "radosbench") " | " ratio(j, "cephfuse", "radosbench") " |" : ""
		}
	}' "$work/results"
if [[ -n $plot ]]; then
	"$here/plot-fio.sh" "$work/results" "$plot"
	echo "run-fio: plot in $plot"
fi
echo "== load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
