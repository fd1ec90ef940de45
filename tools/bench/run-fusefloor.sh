#!/usr/bin/env bash
# run-fusefloor.sh - loligo-fuse (local store) side by side with fusefloor, a
# FUSE filesystem that does nothing (tools/bench/fusefloor.c), in one run:
# creates/s and tar's per-file sequence/s (tools/bench/creates), and what each
# costs in the FUSE daemon's CPU (issue 21.2: the client at the FUSE floor).
#
#   tools/bench/run-fusefloor.sh [--build DIR] [--runs N] [--creates N] [--untar N]
#                                [--perf-record PREFIX] [--set OPT=VAL]... [--keep]
#
#   --build DIR    build tree (default: $LOLIGO_BUILD_DIR, else ./build)
#   --runs N       rounds, each: floor creates, loligo creates, floor untar,
#                  loligo untar (default 3)
#   --creates N    files per creates row (default 5000); --untar N the same for
#                  tar's sequence (default 2000)
#   --perf-record PREFIX   perf record of loligo-fuse ($PERF_RECORD_OPTS, default -g)
#                  during round 1's loligo
#                  rows: PREFIX.create and PREFIX.untar
#   --set OPT=VAL  a config override for loligo-fuse (--OPT=VAL), repeatable
#
# Each loligo row runs in a new directory of one mount (the MDS and the mount
# stay up over the rounds); each floor row in a new directory of the floor.
# Per row: files/s (from creates' own clock), the daemon's CPU (utime+stime of
# the process from /proc, us per file), and for loligo the MDS requests per
# file and the client CPU per MDS request (perf dump mds_client.requests_sent).
# The last lines:
#   RESULT fusefloor round=R target=floor|loligo op=create|untar ops_s=.. cpu_us_per_file=..
#          [mds_ops=OP=N,... mds_cpu_us_per_file=.. mds_req_per_file=.. store_commits_per_file=..
#          cpu_us_per_mds_req=..]
#          cs_per_file=.. [sends_per_file=..] load=..
#   (mds_cpu_us_per_file: loligo-mds's CPU, which shares the machine; store_commits_per_file:
#   loligo-fuse's local store commits, each an LMDB commit with its syncs)
#   (cs_per_file: the daemon's context switches per file, perf stat; sends_per_file:
#   loligo-fuse's sendmsg/sendto calls per file, i.e. sends to the MDS, when perf may
#   count system calls)
#   CPU round=R op=OP thread=NAME us_per_file=..   (loligo-fuse's CPU by thread, "(exited)"
#   for threads that ended during the row) and, with --set fuse_op_cpu=true,
#   CPU round=R op=OP handler=FAMILY count_per_file=.. us_per_file=..
#   SUMMARY op=create|untar floor_ops_s=MIN-MAX loligo_ops_s=MIN-MAX ratio=MIN-MAX
#   (ratio: floor's rate over loligo's, per round; the goal is <= 1.5)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=run-fusefloor
# shellcheck source=tools/bench/lib-local.sh
. "$here/lib-local.sh"
top=$(cd "$here/../.." && pwd)
build=${LOLIGO_BUILD_DIR:-$top/build} runs=3 ncreate=5000 nuntar=2000 perf_prefix= keep=0 sets=()
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--runs) runs=$2; shift ;;
	--creates) ncreate=$2; shift ;;
	--untar) nuntar=$2; shift ;;
	--perf-record) perf_prefix=$2; shift ;;
	--set) sets+=("--$2"); shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "run-fusefloor: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
build=$(cd "$build" && pwd)
mds_bin=$build/mds/loligo-mds fuse_bin=$build/client/fuse/loligo-fuse cli_bin=$build/tools/cli/loligo
floor_bin=$build/tools/bench/fusefloor creates=$build/tools/bench/creates
for b in "$mds_bin" "$fuse_bin" "$cli_bin" "$floor_bin" "$creates"; do
	[[ -x $b ]] || { echo "run-fusefloor: $b missing (ninja -C $build)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/loligo-fusefloor.XXXXXX)
chmod 755 "$work"
mnt=$work/mnt fmnt=$work/floor conf=$work/loligo.conf asok=$work/client.asok mds_asok=$work/mds.asok
mkdir -p "$mnt" "$fmnt" "$work/store"
mds_pid= fuse_pid= floor_pid= perf_pid= stat_pid=

cleanup() {
	set +e
	trap '' INT TERM
	[[ -n $perf_pid ]] && kill -INT "$perf_pid" 2>/dev/null && reap "$perf_pid"
	[[ -n $stat_pid ]] && kill -INT "$stat_pid" 2>/dev/null && reap "$stat_pid"
	unmount_at "$mnt" "$fuse_pid"
	unmount_at "$fmnt" "$floor_pid"
	[[ -n $mds_pid ]] && kill -TERM "$mds_pid" 2>/dev/null && reap "$mds_pid"
	if ((keep)); then echo "run-fusefloor: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

local_mds_start

"$fuse_bin" -f -c "$conf" "--client_mds_addr=127.0.0.1:$port" "${sets[@]}" "$mnt" >"$work/client.out" 2>&1 &
fuse_pid=$!
"$floor_bin" "$fmnt" >"$work/floor.out" 2>&1 &
floor_pid=$!
wait_mounted "$fmnt" "" "$work/floor.out"
wait_mounted "$mnt" "$asok" "$work/client.out"

# the daemon's send system calls (to the MDS: loligo-fuse sends nothing else), if perf may count them
sendev=
perf stat -e syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto -x, -o /dev/null -- true 2>/dev/null &&
	sendev=,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
mds_dump() { "$cli_bin" -f json daemon "$work/mds.asok" perf dump 2>/dev/null; }
sent() { "$cli_bin" -f json daemon "$asok" perf dump 2>/dev/null | jq '.mds_client.requests_sent // 0'; }
commits() { "$cli_bin" -f json daemon "$asok" perf dump 2>/dev/null | jq '.store_local.commits // 0'; }
load() { cut -d' ' -f1 /proc/loadavg; }
# the FUSE handlers' CPU so far (fuse_op_cpu): "family count sum_ns" lines
fuse_cpu() {
	"$cli_bin" -f json daemon "$asok" perf dump 2>/dev/null |
		jq -r '.fuse // {} | to_entries[] | select(.key | endswith("_cpu"))
		       | "\(.key | rtrimstr("_cpu")) \(.value.count) \(.value.sum_ns)"'
}

row() { # ROUND TARGET OP
	local r=$1 t=$2 op=$3 root pid n args=() c0 c1 m0 m1 s0=0 s1=0 k0=0 out ops rate cpu extra=
	[[ $t == floor ]] && root=$fmnt pid=$floor_pid || root=$mnt pid=$fuse_pid
	[[ $op == untar ]] && n=$nuntar args=(--untar) || n=$ncreate
	mkdir "$root/$op.$r"
	[[ $t == loligo ]] && s0=$(sent) && k0=$(commits) && mds_dump > "$work/mds0.json"
	if [[ -n $perf_prefix && $r == 1 && $t == loligo ]]; then
		perf record ${PERF_RECORD_OPTS:--g} -o "$perf_prefix.$op" -p "$fuse_pid" >/dev/null 2>&1 &
		perf_pid=$!
		sleep 0.5
	fi
	perf stat -e context-switches,task-clock$sendev -x, -o "$work/stat" -p "$pid" >/dev/null 2>&1 &
	stat_pid=$!
	sleep 0.2
	[[ $t == loligo ]] && thread_ticks "$pid" > "$work/threads0" && fuse_cpu > "$work/hcpu0"
	c0=$(cpu_ticks "$pid") m0=$(cpu_ticks "$mds_pid")
	out=$("$creates" "${args[@]}" "$root/$op.$r" "$n" | grep '^RESULT')
	c1=$(cpu_ticks "$pid") m1=$(cpu_ticks "$mds_pid")
	[[ $t == loligo ]] && thread_ticks "$pid" > "$work/threads1" && fuse_cpu > "$work/hcpu1"
	kill -INT "$stat_pid"; wait "$stat_pid" || true; stat_pid=
	if [[ -n $perf_pid ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; perf_pid=; fi
	rate=$(sed -n 's/.* ops_s=\([0-9]*\).*/\1/p' <<<"$out")
	cpu=$(( (c1 - c0) * 1000000 / hz / n ))
	if [[ $t == loligo ]]; then
		s1=$(sent)
		mds_dump > "$work/mds1.json"
		ops=$(jq -r --slurpfile a "$work/mds0.json" '[.mds | to_entries[] | select(.key | startswith("op_"))
		      | select(.value | type == "number") | select(.value - ($a[0].mds[.key] // 0) != 0)
		      | "\(.key | ltrimstr("op_"))=\(.value - ($a[0].mds[.key] // 0))"] | join(",")' "$work/mds1.json")
		extra=" mds_ops=$ops mds_cpu_us_per_file=$(( (m1 - m0) * 1000000 / hz / n ))"
		extra+=" mds_req_per_file=$(awk -v a=$((s1 - s0)) -v n=$n 'BEGIN{printf "%.2f", a/n}')"
		extra+=" store_commits_per_file=$(awk -v a=$(( $(commits) - k0 )) -v n=$n 'BEGIN{printf "%.2f", a/n}')"
		extra+=" cpu_us_per_mds_req=$(awk -v c=$(( (c1 - c0) * 1000000 / hz )) -v a=$((s1 - s0)) 'BEGIN{printf "%.1f", a ? c/a : 0}')"
	fi
	extra+=" cs_per_file=$(awk -F, -v n=$n '$3 == "context-switches" {printf "%.1f", $1 / n}' "$work/stat")"
	[[ $t == loligo && -n $sendev ]] &&
		extra+=" sends_per_file=$(awk -F, -v n=$n '$3 ~ /sys_enter_send/ {s += $1} END {printf "%.2f", s / n}' "$work/stat")"
	echo "RESULT fusefloor round=$r target=$t op=$op ops_s=$rate cpu_us_per_file=$cpu$extra load=$(load)" | tee -a "$work/results"
	if [[ $t == loligo ]]; then
		# where loligo-fuse's CPU went per file: by thread, and (with
		# --set fuse_op_cpu=true) in the FUSE handlers by family
		thread_cpu_lines "$work/threads0" "$work/threads1" $((c1 - c0)) "$n" "CPU round=$r op=$op" |
			sed 's/ us_per=/ us_per_file=/'
		awk -v n="$n" -v p="CPU round=$r op=$op" 'NR == FNR { c0[$1] = $2; s0[$1] = $3; next }
			$2 > c0[$1] { printf "%s handler=%s count_per_file=%.2f us_per_file=%.1f\n", p, $1,
				      ($2 - c0[$1]) / n, ($3 - s0[$1]) / 1000 / n }' "$work/hcpu0" "$work/hcpu1"
	fi
}

echo "== fusefloor vs loligo-fuse (local store): $runs rounds, $ncreate creates, $nuntar untar files; $(nproc) CPUs, load $(load)"
for r in $(seq 1 "$runs"); do
	for op in create untar; do
		row "$r" floor "$op"
		row "$r" loligo "$op"
	done
done
for op in create untar; do
	awk -v op="$op" '
	function f(k,   i) { for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[1] == k) return kv[2] }
	$0 ~ " op=" op " " { r = f("round"); v[f("target"), r] = f("ops_s"); rounds[r] = 1 }
	END {
		for (r in rounds) {
			fl = v["floor", r]; lo = v["loligo", r]; q = lo ? fl / lo : 0
			if (!n++ || fl < fmin) fmin = fl; if (fl > fmax) fmax = fl
			if (n == 1 || lo < lmin) lmin = lo; if (lo > lmax) lmax = lo
			if (n == 1 || q < qmin) qmin = q; if (q > qmax) qmax = q
		}
		printf "SUMMARY op=%s floor_ops_s=%d-%d loligo_ops_s=%d-%d ratio=%.2f-%.2f\n", op, fmin, fmax, lmin, lmax, qmin, qmax
	}' "$work/results"
done
