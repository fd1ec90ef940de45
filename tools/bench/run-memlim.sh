#!/usr/bin/env bash
# run-memlim.sh - issue 21.4: bytes per cached inode in loligo-fuse and in
# the MDS, and (with --compare) the same with the binaries of another build
# tree, side by side.
#
#   tools/bench/run-memlim.sh [--build DIR] [--compare DIR] [--files N]
#                             [--per-dir K] [--workload ls|stat] [--keep]
#
#   --files N     files in the namespace (default 200000), made over the
#                 wire by tools/bench/mds_bench --fill (of --build) in
#                 directories of --per-dir K (default 1000)
#   --compare DIR also "local0": the loligo-mds and loligo-fuse of DIR
#   --workload    ls (default): `ls -lR` of the mount (READDIRs: the client
#                 also keeps the directories' listings); stat: a stat of
#                 every file by name (LOOKUPs only, 4 in parallel)
#
# Per target: a fresh filesystem on the local store, N files made over the
# wire (the MDS's anonymous RSS and, where the MDS has it, `cache status`
# before and after), then loligo-fuse mounted with bounds that keep
# everything (client_cache_size 10,000,000; client_cache_memory_limit 0
# where it exists) and `ls -lR` of the mount, which makes the kernel and
# the client cache every inode.  Printed: the client's anonymous RSS
# before and after the listing, its cached inodes (perf client.inodes) and
# what its caches hold by their own count (client.cache_bytes, where it
# exists), per inode; and the MDS's.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=run-memlim bench_fs=memlimbench
# shellcheck source=tools/bench/lib-targets.sh
. "$here/lib-targets.sh"
files=200000 per_dir=1000 workload=ls
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--files) files=${2:?--files needs a value}; shift ;;
	--per-dir) per_dir=${2:?--per-dir needs a value}; shift ;;
	--workload) workload=${2:?--workload needs a value}; shift ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
[[ $workload == ls || $workload == stat ]] || bench_usage "--workload takes ls or stat"
bench_need jq fusermount3
[[ $(id -u) == 0 ]] || { echo "run-memlim: needs root (FUSE mounts)" >&2; exit 1; }
mds_bench=$build/tools/bench/mds_bench
[[ -x $mds_bench ]] || { echo "run-memlim: no $mds_bench (ninja -C $build mds_bench)" >&2; exit 1; }
bench_workdir
cleanup() {
	bench_cleanup
	if ((keep)); then echo "run-memlim: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

anon_mb() { awk '/RssAnon/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
targets=local
[[ -n $compare ]] && targets="local0 local"
for t in $targets; do
	loligo_setup "$t"
	m0=$(anon_mb "${mds_pid[$t]}")
	"$mds_bench" --port "${mds_port[$t]}" --keyring "$work/client.keyring" -n 4 --fill "$files" \
		--per-dir "$per_dir" 2>"$work/$t-fill.err" | tee "$work/$t-fill.out"
	m1=$(anon_mb "${mds_pid[$t]}")
	# what the MDS says it holds (an MDS without `cache status`: nothing)
	mc=$("$cli" -f json daemon "$work/$t-mds.asok" cache status 2>/dev/null || echo '{}')
	mino=$(jq -r '.inodes_cached // 0' <<<"$mc")
	mbytes=$(jq -r '.total_bytes // 0' <<<"$mc")
	# the client keeps everything: the question is what each inode costs
	fuse_args="--client_cache_size=10000000"
	"$(bin_of "$t")/client/fuse/loligo-fuse" --help 2>&1 | grep -q client_cache_memory_limit &&
		fuse_args+=" --client_cache_memory_limit=0"
	LOLIGO_BENCH_FUSE_ARGS=$fuse_args loligo_mount "$t"
	c0=$(anon_mb "${fuse_pid[$t]}")
	t0=$(date +%s.%N)
	if [[ $workload == ls ]]; then
		ls -lR "$work/$t.mnt" >/dev/null
	else
		# mds_bench --fill's names: fill.D/fF, D = F / per_dir
		seq 0 $((files - 1)) | awk -v m="$work/$t.mnt/fill." -v k="$per_dir" '{ printf "%s%d/f%d\n", m, int($1 / k), $1 }' |
			xargs -P 4 -n 500 stat >/dev/null
	fi
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	c1=$(anon_mb "${fuse_pid[$t]}")
	perf=$("$cli" -f json daemon "$work/$t-client.asok" perf dump 2>/dev/null || echo '{}')
	cino=$(jq -r '.client.inodes // 0' <<<"$perf")
	cbytes=$(jq -r '.client.cache_bytes // 0' <<<"$perf")
	echo "RESULT run-memlim target=$t files=$files" \
		"mds_rss_anon_mb=$m0->$m1 mds_rss_per_file=$(awk -v a="$m0" -v b="$m1" -v n="$files" 'BEGIN { printf "%.0f", (b - a) * 1048576 / n }')" \
		"mds_cache_bytes_per_inode=$(awk -v b="$mbytes" -v n="$mino" 'BEGIN { if (n + 0 > 0) printf "%.0f", b / n; else printf "n/a" }')" \
		"workload=$workload workload_s=$secs client_rss_anon_mb=$c0->$c1 client_inodes=$cino" \
		"client_rss_per_inode=$(awk -v a="$c0" -v b="$c1" -v n="$cino" 'BEGIN { printf "%.0f", n ? (b - a) * 1048576 / n : 0 }')" \
		"client_cache_bytes_per_inode=$(awk -v b="$cbytes" -v n="$cino" 'BEGIN { if (n + 0 > 0 && b + 0 > 0) printf "%.0f", b / n; else printf "n/a" }')"
	unmount "$work/$t.mnt" "${fuse_pid[$t]}"
	unset "fuse_pid[$t]"
done
