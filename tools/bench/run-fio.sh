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
#                   OSD's op_r latency over the job (osd.T.JOB.RUN.txt); keeps
#                   the temp dir
#   --compare DIR   also target "rados0": loligo on RADOS with the binaries
#                   of build tree DIR (say, main before a change), in the same
#                   runs, alternating; the table gets a column for it
#   --rows LIST     comma-separated subset of the rows below (all)
#   --keep          keep the temp dir (logs, fio JSON)
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
# process (loligo-fuse or ceph-fuse) used.  The last lines are the table:
#   TABLE row | local | rados | ceph-fuse | rados/ceph-fuse (min-max over runs)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
build=${LOLIGO_BUILD_DIR:-$top/build} runs=1 size4k=256M size1m=1G runtime=30 keep=0 mounts=1 perf=0
ceph_dir= ceph_start=0 targets= tsv= plot= compare=
rows=randwrite-4k,randwrite-4k-fsync,randread-4k,seqwrite-1m,seqwrite-1m-fsync,seqread-1m
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--ceph) ceph_dir=$(cd "$2" && pwd); shift ;;
	--ceph-start) ceph_start=1 ;;
	--runs) runs=$2; shift ;;
	--size4k) size4k=$2; shift ;;
	--size1m) size1m=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--targets) targets=$2; shift ;;
	--tsv) tsv=$2; shift ;;
	--plot) plot=$2; shift ;;
	--mounts) mounts=$2; shift ;;
	--perf) perf=1 keep=1 ;;
	--compare) compare=$(cd "$2" && pwd); shift ;;
	--rows) rows=$2; shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,51p' "$0"; exit 0 ;;
	*) echo "run-fio: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
build=$(cd "$build" && pwd)
for b in fio jq fusermount3; do
	command -v $b >/dev/null || { echo "run-fio: needs $b (tools: install-deps.sh --bench)" >&2; exit 1; }
done
cli=$build/tools/cli/loligo
for b in "$build" ${compare:+"$compare"}; do
	[[ -x $b/mds/loligo-mds && -x $b/client/fuse/loligo-fuse && -x $b/tools/cli/loligo ]] ||
		{ echo "run-fio: no loligo-mds/loligo-fuse/loligo in $b" >&2; exit 1; }
done
compare_label=
if [[ -n $compare ]]; then   # the compared build's commit, for the table's header
	src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$compare/CMakeCache.txt" 2>/dev/null)
	compare_label=$(git -C "${src:-$compare}" rev-parse --short HEAD 2>/dev/null || basename "$compare")
fi
bin_of() { # TARGET -> its build tree
	if [[ $1 == rados0 ]]; then echo "$compare"; else echo "$build"; fi
}
jobs_dir=$here/fio
if [[ -n $ceph_dir || $ceph_start == 1 ]]; then
	command -v ceph-fuse >/dev/null || { echo "run-fio: needs ceph-fuse and ceph-mds (install-deps.sh --bench)" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/loligo-fio.XXXXXX)
chmod 755 "$work"
declare -A mds_pid fuse_pid mds_port
ceph_mnt=$work/cephfuse.mnt

unmount() { # MNT PID
	local m=$1 p=${2:-}
	if grep -q " $m fuse" /proc/mounts; then
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
	fi
	[[ -n $p ]] || return 0
	for _ in $(seq 1 200); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
}
cleanup() {
	set +e
	for t in "${!fuse_pid[@]}"; do unmount "$work/$t.mnt" "${fuse_pid[$t]}"; done
	[[ -d $work/local2.mnt ]] && unmount "$work/local2.mnt" "${fuse2_pid:-}"
	cephfuse_umount
	for t in "${!mds_pid[@]}"; do kill -TERM "${mds_pid[$t]}" 2>/dev/null && wait "${mds_pid[$t]}" 2>/dev/null; done
	if [[ -n ${cluster_started:-} ]]; then
		"$shared/ceph/stop-cluster.sh" "$ceph_dir" --wipe >/dev/null 2>&1
	elif [[ -n $ceph_dir ]]; then
		# our filesystems' pools: a purge cut short by the last unmount leaves
		# objects behind, and a memstore OSD holds them in RAM
		for t in "${!mds_port[@]}"; do
			[[ $t == rados* ]] || continue
			for p in "fiobench$$${t}_metadata" "fiobench$$${t}_data"; do
				ceph -c "$ceph_dir/ceph.conf" osd pool rm "$p" "$p" --yes-i-really-really-mean-it >/dev/null 2>&1
			done
		done
	fi
	if ((keep)); then echo "run-fio: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ((ceph_start)); then
	ceph_dir=$work/ceph
	for attempt in 1 2 3 4 5; do
		port=$(python3 -c 'import random,socket
for _ in range(100):
    p = random.randrange(20000, 30000)
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break')
		if CEPH_PORT=$port CEPH_MDS=1 CEPH_POOL= "$shared/ceph/start-cluster.sh" "$ceph_dir" >"$work/ceph-start.log" 2>&1; then
			cluster_started=1
			break
		fi
		"$shared/ceph/stop-cluster.sh" "$ceph_dir" --wipe >/dev/null 2>&1 || true
	done
	[[ -n ${cluster_started:-} ]] || { echo "run-fio: could not start a Ceph cluster:" >&2; tail -5 "$work/ceph-start.log" >&2; exit 1; }
fi
all_targets=local
[[ -n $ceph_dir ]] && all_targets=local,rados,cephfuse
[[ -n $ceph_dir && -n $compare ]] && all_targets=local,rados0,rados,cephfuse
targets=${targets:-$all_targets}

"$cli" auth get-or-create client.admin --keyring "$work/keyring" -o "$work/client.keyring" >/dev/null 2>&1

# loligo target T (local|rados|rados0): config, mkfs, MDS
loligo_setup() {
	local t=$1 conf=$work/$t.conf store mds_bin
	mds_bin=$(bin_of "$t")/mds/loligo-mds
	if [[ $t == local ]]; then
		store="store_backend = local
store_local_path = $work/store"
	else
		store="store_backend = rados
rados_conf = $ceph_dir/ceph.conf
fs_name = fiobench$$$t"
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
	"$mds_bin" -c "$conf" --mkfs >"$work/$t-mds.out" 2>&1 || { echo "run-fio: mkfs ($t):" >&2; tail "$work/$t-mds.out" >&2; exit 1; }
	"$mds_bin" -c "$conf" --mds_port=0 --port-file "$work/$t-mds.port" >>"$work/$t-mds.out" 2>&1 &
	mds_pid[$t]=$!
	for _ in $(seq 1 150); do [[ -s $work/$t-mds.port ]] && break; sleep 0.1; done
	[[ -s $work/$t-mds.port ]] || { echo "run-fio: loligo-mds ($t) did not start:" >&2; tail "$work/$t-mds.out" >&2; exit 1; }
	mds_port[$t]=$(cat "$work/$t-mds.port")
	mkdir -p "$work/$t.mnt"
}
loligo_mount() { # T [MNT]
	local t=$1 m=${2:-$work/$1.mnt} p fuse_bin
	fuse_bin=$(bin_of "$t")/client/fuse/loligo-fuse
	mkdir -p "$m"
	"$fuse_bin" -f -c "$work/$t.conf" "--client_mds_addr=127.0.0.1:${mds_port[$t]}" "$m" >>"$work/$t-client.out" 2>&1 &
	p=$!
	for _ in $(seq 1 150); do grep -q " $m fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $m fuse" /proc/mounts || { echo "run-fio: loligo-fuse ($t) did not mount:" >&2; tail "$work/$t-client.out" >&2; exit 1; }
	if [[ -z ${2:-} ]]; then fuse_pid[$t]=$p; else fuse2_pid=$p; fi
}
cephfuse_mount() {
	mkdir -p "$ceph_mnt"
	"$shared/ceph/mount-cephfs.sh" "$ceph_dir" "$ceph_mnt" >>"$work/cephfuse.out" 2>&1 ||
		{ echo "run-fio: ceph-fuse did not mount:" >&2; tail "$work/cephfuse.out" >&2; exit 1; }
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
cpu_of() { # PID -> CPU seconds (utime + stime) so far
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# the OSD's read ops so far: "count sum_seconds" of op_r_latency
osd_r_latency() {
	ceph -c "$ceph_dir/ceph.conf" daemon osd.0 perf dump osd 2>/dev/null |
		jq -r '.osd.op_r_latency | "\(.avgcount) \(.sum)"' 2>/dev/null || echo "0 0"
}
# --perf, after a read job: stop perf, keep the top of its report, the
# client's counters and the OSD's mean read latency over the job
profile_done() { # RUN TARGET JOB PERF_PID OSD_BEFORE
	local run=$1 t=$2 job=$3 p=$4 base=$work/perf.$2.$3.$1
	kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null || true
	perf report -i "$base.data" --no-children --percent-limit 1.5 --stdio -g none --sort comm,dso,sym 2>/dev/null |
		grep -v '^$' | head -60 >"$base.txt" || true
	if [[ $t == cephfuse ]]; then
		local asok
		asok=$(ls "$ceph_dir"/run/fuse.*.asok 2>/dev/null | head -1)
		[[ -n $asok ]] && ceph --admin-daemon "$asok" perf dump >"$work/$t.$job.$run.counters.json" 2>/dev/null
	else
		"$cli" daemon "$work/$t-client.asok" perf dump >"$work/$t.$job.$run.counters.json" 2>/dev/null || true
	fi
	if [[ -n $5 ]]; then
		echo "$5 $(osd_r_latency)" | awk '{ n = $3 - $1; printf "osd.0 op_r: %d ops, mean latency %.3f ms\n", n, (n > 0 ? ($4 - $2) / n * 1000 : 0) }' \
			>"$work/osd.$t.$job.$run.txt"
	fi
}

# run_job RUN TARGET JOB: fio, then one line in $work/results
run_job() {
	local run=$1 t=$2 job=$3 dir pid c0 c1 out=$work/$2.$3.$1.json
	dir=$(mnt_of "$t")
	pid=${fuse_pid[$t]}
	c0=$(cpu_of "$pid")
	local prof= osd0=
	if ((perf)) && [[ $job == *read* ]]; then
		perf record -q -F 499 -g -p "$pid" -o "$work/perf.$t.$job.$run.data" >/dev/null 2>&1 &
		prof=$!
		[[ -n $ceph_dir ]] && osd0=$(osd_r_latency)
	fi
	FIO_DIR=$dir FIO_SIZE4K=$size4k FIO_SIZE1M=$size1m FIO_RUNTIME=$runtime \
		fio --output-format=json "$jobs_dir/$job.fio" >"$out" 2>"$work/$t.$job.$run.err" ||
		{ echo "run-fio: fio $job on $t failed:" >&2; tail -5 "$work/$t.$job.$run.err" >&2; exit 1; }
	c1=$(cpu_of "$pid")
	[[ -n $prof ]] && profile_done "$run" "$t" "$job" "$prof" "$osd0"
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
run_target() { # RUN TARGET
	local run=$1 t=$2 m
	m=$(mnt_of "$t")
	mount_target "$t"
	row randwrite-4k && run_job "$run" "$t" randwrite-4k
	row randwrite-4k-fsync && run_job "$run" "$t" randwrite-4k-fsync
	if row randread-4k; then
		FIO_DIR=$m FIO_SIZE4K=$size4k fio --output-format=json "$jobs_dir/layout-4k.fio" >"$work/$t.layout.json"
		umount_target "$t"; mount_target "$t"
		run_job "$run" "$t" randread-4k
	fi
	row seqwrite-1m && run_job "$run" "$t" seqwrite-1m
	row seqwrite-1m-fsync && run_job "$run" "$t" seqwrite-1m-fsync
	if row seqread-1m; then
		if ! row seqwrite-1m && ! row seqwrite-1m-fsync; then   # lay out the file it reads
			FIO_DIR=$m FIO_SIZE1M=$size1m fio --output-format=json "$jobs_dir/seqwrite-1m-fsync.fio" >"$work/$t.layout1m.json"
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
for run in $(seq 1 "$runs"); do
	for t in "${tl[@]}"; do run_target "$run" "$t"; done
done

if ((mounts >= 2)) && [[ ,$targets, == *,local,* ]]; then
	loligo_mount local
	loligo_mount local "$work/local2.mnt"
	half=$(( $(numfmt --from=iec "$size1m") / 2 ))
	fio --output-format=json --ioengine=psync --rw=write --bs=1M --size="$half" --end_fsync=1 \
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
		n = split("randwrite-4k randwrite-4k-fsync randread-4k seqwrite-1m seqwrite-1m-fsync seqread-1m", order, " ")
		c0 = ("rados0" in tgt)
		printf "TABLE | fio (MiB/s) | loligo, local store |%s loligo on RADOS | ceph-fuse | RADOS / ceph-fuse |%s\n",
			c0 ? " loligo on RADOS, " compare " |" : "", c0 ? " RADOS / " compare " |" : ""
		printf "TABLE |---|---|---|---|---|%s\n", c0 ? "---|---|" : ""
		for (i = 1; i <= n; i++) {
			j = order[i]; if (!(j in jobs)) continue
			printf "TABLE | %s | %s |%s %s | %s | %s |%s\n", j, cell(j, "local"), c0 ? " " cell(j, "rados0") " |" : "",
				cell(j, "rados"), cell(j, "cephfuse"), ratio(j, "rados", "cephfuse"),
				c0 ? " " ratio(j, "rados", "rados0") " |" : ""
		}
	}' "$work/results"
if [[ -n $plot ]]; then
	"$here/plot-fio.sh" "$work/results" "$plot"
	echo "run-fio: plot in $plot"
fi
echo "== load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
