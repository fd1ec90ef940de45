#!/usr/bin/env bash
# run-bigdir.sh - issue 21's big directories side by side in one run: `ls -l`
# of a cold directory of N files on ext4 (a loop device made here) and on
# loligo on the local store (and, with --compare, loligo of another build
# tree: before/after), and the MDS requests the listing cost, by op.
#
#   tools/bench/run-bigdir.sh [--build DIR] [--files N[,N...]] [--runs N]
#                             [--targets LIST] [--compare DIR] [--mds-only N]
#                             [--tsv FILE] [--perf DIR] [--keep]
#
#   --build DIR     build tree with loligo-mds, loligo-fuse, loligo, bigdir
#                   (default: $LOLIGO_BUILD_DIR, else ./build)
#   --files LIST    directory sizes, comma-separated (default 20000,200000)
#   --runs N        each (size, target) N times (default 2)
#   --targets LIST  comma-separated subset of ext4,local,local0
#   --compare DIR   also local0: loligo with the binaries of build tree DIR
#   --tools DIR     the build tree of bigdir and creates (default: --build's;
#                   for a --build of a commit that has no bigdir yet)
#   --mds-only N    instead: the MDS side of one directory of N entries (no
#                   FUSE): make it over the wire, restart the MDS, and time
#                   its first lookup (the directory's load), a full READDIR
#                   listing, 20,000 random lookups, and creates into it
#                   against creates into an empty directory (alternating);
#                   the MDS's RSS after each step
#   --perf DIR      record each loligo `ls -l` with `perf record -g` of
#                   loligo-fuse and loligo-mds into DIR/perf-T-N-R.data
#                   (times then include perf's overhead; BIGDIR_PERF_OPTS
#                   replaces `-F 999 -g`, e.g. "-F 299 --call-graph
#                   dwarf,16384" for stacks through liburcu and libc)
#   --tsv FILE      append one line per measurement:
#                   run target files secs mds_requests getxattr lookup getattr readdir load1
#                   fuse_cpu mds_cpu fuse_xattr (GETXATTRs that reached loligo-fuse)
#   --keep          keep the temp dir
#
# Per size and target: a fresh filesystem (ext4: mkfs of a 4 GiB sparse file
# on a loop device; loligo: mkfs of a new local store), N empty files made
# (ext4: tools/bench/creates through the mount; loligo: tools/bench/bigdir
# over the wire, 8 sessions, since FUSE creates would take minutes at
# 200,000), caches dropped (ext4: umount + mount and drop_caches; loligo:
# loligo-fuse unmounted and mounted again, and drop_caches; the MDS keeps
# its cache, as a server would), then `ls -l DIR >/dev/null` timed.  The MDS
# requests are the difference of its `perf dump` around the ls, and the CPU
# seconds loligo-fuse and loligo-mds spent in it (user + system: less at
# the mercy of the other sessions' load than the wall time).  The last lines
# are the table, min-max over the runs:
#   TABLE files | ext4 s | loligo s | x ext4 | MDS requests (getxattr/lookup/getattr/readdir) | CPU s fuse/mds
#         | FUSE GETXATTRs per file (the kernel's xattr questions, fuse.xattr)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-bigdir bench_fs=bigdirbench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
files=20000,200000 runs=2 mds_only='' t='' tools='' perf_dir=''
runs_set=0
while (($#)); do
	if bench_opt "$@"; then
		[[ $1 == --runs ]] && runs_set=1
		shift "$bench_nargs"; continue
	fi
	case $1 in
	--files) files=${2:?--files needs a value}; shift ;;
	--mds-only) mds_only=${2:?--mds-only needs a value}; shift ;;
	--perf) perf_dir=${2:?--perf needs a directory}; shift ;;
	--tools) tools=${2:?--tools needs a value}; shift ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
((runs_set)) || runs=2
bench_check
[[ $files =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bench_usage "--files takes sizes like 20000,200000"
[[ -z $mds_only || $mds_only =~ ^[1-9][0-9]*$ ]] || bench_usage "--mds-only takes a size"
bench_need jq fusermount3 mkfs.ext4 losetup
[[ $(id -u) == 0 ]] || { echo "run-bigdir: needs root (loop device, mounts, drop_caches)" >&2; exit 1; }
tools=${tools:-$build}
bigdir=$tools/tools/bench/bigdir creates=$tools/tools/bench/creates
[[ -x $bigdir && -x $creates ]] || { echo "run-bigdir: no $bigdir or $creates (ninja -C $tools bigdir creates)" >&2; exit 1; }

bench_workdir
loopdev='' ext4_mnt=$work/ext4.mnt
cleanup() {
	set +e
	trap '' INT TERM
	bench_stop_workload
	bench_cleanup
	mountpoint -q "$ext4_mnt" && { umount "$ext4_mnt" || umount -l "$ext4_mnt"; }
	[[ -n $loopdev ]] && losetup -d "$loopdev"
	if ((keep)); then echo "run-bigdir: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
rss_of() { awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
mds_perf() { "$cli" -f json daemon "$work/$1-mds.asok" perf dump 2>/dev/null || echo '{}'; }
fuse_perf() { "$cli" -f json daemon "$work/$1-client.asok" perf dump 2>/dev/null || echo '{}'; }
op_count() { jq -r ".mds.$1 // 0"; }
stop_mds() { # T
	kill -TERM "${mds_pid[$1]}" 2>/dev/null && wait "${mds_pid[$1]}" 2>/dev/null
	unset "mds_pid[$1]"
	return 0
}
start_mds() { # T: the filesystem loligo_setup made, again
	local mds_bin
	mds_bin=$(bin_of "$1")/mds/loligo-mds
	rm -f "$work/$1-mds.port"
	"$mds_bin" -c "$work/$1.conf" --mds_port=0 --port-file "$work/$1-mds.port" >>"$work/$1-mds.out" 2>&1 &
	mds_pid[$1]=$!
	for _ in $(seq 1 3000); do [[ -s $work/$1-mds.port ]] && break; sleep 0.1; done
	[[ -s $work/$1-mds.port ]] || { echo "run-bigdir: loligo-mds ($1) did not come back:" >&2; tail "$work/$1-mds.out" >&2; exit 1; }
	mds_port[$1]=$(cat "$work/$1-mds.port")
}
wire() { "$bigdir" --port "${mds_port[$t]}" --keyring "$work/client.keyring" "$@"; }
fresh_loligo() { # T: a new filesystem and its MDS (the old one's store removed)
	[[ -n ${mds_pid[$1]:-} ]] && stop_mds "$1"
	rm -rf "$work/$1.store" "$work/$1.store.data" "$work/$1-mds.asok" "$work/$1-mds.port"
	loligo_setup "$1"
}

# ---- the MDS side of one big directory ------------------------------------
if [[ -n $mds_only ]]; then
	n=$mds_only t=local
	fresh_loligo local
	t0=$(now)
	wire -j 8 make "$n" >"$work/make.out" || { cat "$work/make.out" >&2; exit 1; }
	echo "make: $n entries over the wire in $(secs_since "$t0") s; MDS RSS $(rss_of "${mds_pid[local]}")"
	t0=$(now); stop_mds local; echo "MDS stop (SIGTERM): $(secs_since "$t0") s"
	t0=$(now); start_mds local; echo "MDS start: $(secs_since "$t0") s; RSS $(rss_of "${mds_pid[local]}")"
	t0=$(now); wire --files 1 lookup 1 >/dev/null
	echo "first lookup in it (loads the directory): $(secs_since "$t0") s; RSS $(rss_of "${mds_pid[local]}")"
	wire list "$n" | tee -a "$work/results"
	echo "after the listing: RSS $(rss_of "${mds_pid[local]}")"
	wire --files "$n" lookup 20000 | tee -a "$work/results"
	wire --dir empty make 0 >/dev/null
	for r in $(seq 1 "$runs"); do
		echo "creates run $r: big, then empty:"
		wire create 2000 | sed "s/^/  big ($n): /"
		wire --dir empty create 2000 | sed 's/^/  empty: /'
	done
	echo "store: $(du -sh "$work/local.store" | cut -f1)"
	exit 0
fi

# ---- ls -l, cold ----------------------------------------------------------
all_targets=ext4,local
[[ -n $compare ]] && all_targets=ext4,local0,local
targets=${targets:-$all_targets}
IFS=, read -r -a tlist <<<"$targets"
IFS=, read -r -a flist <<<"$files"
for t in "${tlist[@]}"; do
	case $t in ext4|local|local0) ;; *) bench_usage "unknown target $t" ;; esac
	[[ $t == local0 && -z $compare ]] && bench_usage "local0 needs --compare DIR"
done
if [[ " ${tlist[*]} " == *" ext4 "* ]]; then
	truncate -s 4G "$work/ext4.img"
	loopdev=$(losetup -f --show "$work/ext4.img") || { echo "run-bigdir: losetup failed" >&2; exit 1; }
	mkdir -p "$ext4_mnt"
fi
: >"$work/results"
for n in "${flist[@]}"; do
	for t in "${tlist[@]}"; do
		# the directory, made once per size and target
		if [[ $t == ext4 ]]; then
			mountpoint -q "$ext4_mnt" && umount "$ext4_mnt"
			mkfs.ext4 -q -F "$loopdev" >"$work/mkfs.out" 2>&1 && mount "$loopdev" "$ext4_mnt" ||
				{ echo "run-bigdir: mkfs/mount of $loopdev:" >&2; cat "$work/mkfs.out" >&2; exit 1; }
			mkdir "$ext4_mnt/bigdir"
			"$creates" "$ext4_mnt/bigdir" "$n" >"$work/ext4.make.out" ||
				{ cat "$work/ext4.make.out" >&2; exit 1; }
			dir=$ext4_mnt/bigdir
		else
			[[ -n ${fuse_pid[$t]:-} ]] && umount_target "$t"
			fresh_loligo "$t"
			bg_run wire -j 8 make "$n" >"$work/$t.make.out" || { cat "$work/$t.make.out" >&2; exit 1; }
			dir=$work/$t.mnt/bigdir
		fi
		for r in $(seq 1 "$runs"); do
			# cold: the client's caches (loligo-fuse's and the kernel's) dropped
			if [[ $t == ext4 ]]; then
				umount "$ext4_mnt" && mount "$loopdev" "$ext4_mnt"
			else
				[[ -n ${fuse_pid[$t]:-} ]] && umount_target "$t"
				loligo_mount "$t"
			fi
			sync
			echo 3 >/proc/sys/vm/drop_caches
			p0='{}' p1='{}'
			c0f=0 c0m=0 x0=0
			[[ $t != ext4 ]] && { p0=$(mds_perf "$t"); x0=$(fuse_perf "$t" | jq -r '.fuse.xattr // 0'); c0f=$(cpu_of "${fuse_pid[$t]}"); c0m=$(cpu_of "${mds_pid[$t]}"); }
			perf_pid=''
			if [[ -n $perf_dir && $t != ext4 ]]; then
				mkdir -p "$perf_dir"
				perf record -q ${BIGDIR_PERF_OPTS:--F 999 -g} -p "${fuse_pid[$t]},${mds_pid[$t]}" \
					-o "$perf_dir/perf-$t-$n-$r.data" >/dev/null 2>&1 &
				perf_pid=$!
				sleep 1   # perf attaches: not synchronisation of the measurement
			fi
			t0=$(now)
			bg_run ls -l "$dir" >"$work/ls.out"
			secs=$(secs_since "$t0")
			if [[ -n $perf_pid ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
			cf=0 cm=0 fx=0
			if [[ $t != ext4 ]]; then
				p1=$(mds_perf "$t")
				fx=$(($(fuse_perf "$t" | jq -r '.fuse.xattr // 0') - x0))
				cf=$(awk -v a="$c0f" -v b="$(cpu_of "${fuse_pid[$t]}")" 'BEGIN { printf "%.2f", b - a }')
				cm=$(awk -v a="$c0m" -v b="$(cpu_of "${mds_pid[$t]}")" 'BEGIN { printf "%.2f", b - a }')
			fi
			lines=$(($(wc -l <"$work/ls.out") - 1))   # less "total"
			((lines == n)) || { echo "run-bigdir: ls -l of $t listed $lines of $n files" >&2; exit 1; }
			d() { echo $(($(op_count "$1" <<<"$p1") - $(op_count "$1" <<<"$p0"))); }
			reqs=$(d requests) gx=$(d op_getxattr) lk=$(d op_lookup) ga=$(d op_getattr) rd=$(d op_readdir)
			printf '%s %s %s %s %s %s %s %s %s %s %s %s %s\n' "$r" "$t" "$n" "$secs" "$reqs" "$gx" "$lk" "$ga" "$rd" "$(load1)" "$cf" "$cm" "$fx" |
				tee -a "$work/results"
		done
		if [[ $t == ext4 ]]; then umount "$ext4_mnt"; else umount_target "$t"; stop_mds "$t"; fi
	done
done
[[ -n $tsv ]] && cat "$work/results" >>"$tsv"

# the table: min-max per (files, target)
echo
echo "TABLE files | target | ls -l s (min-max) | x ext4 (min) | MDS requests (min-max): getxattr/lookup/getattr/readdir | load | CPU s (min-max) loligo-fuse / loligo-mds | FUSE GETXATTRs per file"
awk '
	{ k = $3 " " $2; if (!(k in lo) || $4 < lo[k]) lo[k] = $4; if (!(k in hi) || $4 > hi[k]) hi[k] = $4
	  if (!(k in rlo) || $5 < rlo[k]) rlo[k] = $5; if (!(k in rhi) || $5 > rhi[k]) rhi[k] = $5
	  ops[k] = $6 "/" $7 "/" $8 "/" $9; ld[k] = ld[k] (ld[k] == "" ? "" : ",") $10
	  if (!(k in flo) || $11 < flo[k]) flo[k] = $11; if (!(k in fhi) || $11 > fhi[k]) fhi[k] = $11
	  if (!(k in mlo) || $12 < mlo[k]) mlo[k] = $12; if (!(k in mhi) || $12 > mhi[k]) mhi[k] = $12
	  if ($13 != "") fx[k] = fx[k] (fx[k] == "" ? "" : ",") sprintf("%.2f", $13 / $3)
	  if (!($3 in seen)) { seen[$3] = 1; order[++nf] = $3 }
	  if (!($2 in tseen)) { tseen[$2] = 1; torder[++nt] = $2 } }
	END {
		for (i = 1; i <= nf; i++) for (j = 1; j <= nt; j++) {
			k = order[i] " " torder[j]; if (!(k in lo)) continue
			e = order[i] " ext4"; x = (e in lo && lo[e] > 0) ? sprintf("%.1fx", lo[k] / lo[e]) : "-"
			cpu = torder[j] == "ext4" ? "-" : sprintf("%s-%s / %s-%s", flo[k], fhi[k], mlo[k], mhi[k])
			printf "TABLE %s | %s | %s-%s | %s | %s-%s: %s | %s | %s | %s\n", order[i], torder[j], lo[k], hi[k], x,
			       rlo[k], rhi[k], (torder[j] == "ext4" ? "-" : ops[k]), ld[k], cpu, (torder[j] == "ext4" ? "-" : fx[k])
		}
	}' "$work/results"
