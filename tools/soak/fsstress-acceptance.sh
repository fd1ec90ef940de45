#!/usr/bin/env bash
# fsstress-acceptance.sh - issue 24's acceptance runs of LTP's fsstress, each
# on a fresh loligo filesystem, and a check after each that the mount still
# serves (a file written, read back, listed and removed on every mount):
#
#   seeds   fsstress -p 20 -n 10000 -s S for S = 1..5
#   wide    fsstress -p 64 -n 2000
#   two     fsstress -p 8 -n 5000 on each of two mounts (two loligo-fuse
#           processes) of the same filesystem at once, in one directory tree
#
#   tools/soak/fsstress-acceptance.sh --fsstress PATH [--build DIR]
#           [--ceph DIR | --ceph-start] [--targets local,rados] [--rows seeds,wide,two]
#           [--seeds "1 2 3 4 5"] [--keep]
#
# A run that does not end within --limit seconds (default 3600) is a hang:
# the script prints every thread's stack of the loligo processes and the
# client's `ops`, and exits 1.  The last lines are the table.  Not a test:
# hours on two cores (seed runs take ~10 minutes each).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=${LOLIGO_SHARED_DIR:-$top/../shared}
bench=fsstress-acceptance bench_fs=fsaccept
# shellcheck source=tools/bench/lib-targets.sh
. "$top/tools/bench/lib-targets.sh"
fsstress= rows=seeds,wide,two seeds="1 2 3 4 5" limit=3600
while (($#)); do
	if bench_opt "$@"; then shift "$bench_nargs"; continue; fi
	case $1 in
	--fsstress) fsstress=$2; shift ;;
	--rows) rows=$2; shift ;;
	--seeds) seeds=$2; shift ;;
	--limit) limit=$2; shift ;;
	*) bench_usage "unknown argument '$1'" ;;
	esac
	shift
done
bench_check
[[ -n $fsstress && -x $fsstress ]] || bench_usage "--fsstress PATH to an fsstress binary is required"
bench_need fusermount3 jq
[[ $(id -u) == 0 ]] || { echo "$bench: needs root (mounts)" >&2; exit 1; }

bench_workdir
cleanup() {
	set +e
	trap '' INT TERM
	pkill -KILL -f "^$fsstress " 2>/dev/null
	bench_cleanup
	if ((keep)); then echo "$bench: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

((ceph_start)) && bench_ceph_start
targets=${targets:-local}
[[ -n $ceph_dir && $targets == local ]] && targets=local,rados
failed=0

table=()
row() { # TARGET NAME RESULT
	local line
	line=$(printf '%-6s %-28s %s' "$1" "$2" "$3")
	echo "$line"
	table+=("$line")
}

# every thread of the target's daemons, and what the client says it waits for
dump_hang() { # TARGET
	local t=$1 p
	for p in "${mds_pid[$t]}" "${fuse_pid[$t]:-}" "$fuse2_pid"; do
		[[ -n $p ]] && kill -0 "$p" 2>/dev/null || continue
		echo "---- threads of pid $p ($(cat /proc/"$p"/comm))"
		gdb -p "$p" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)' | head -400
	done
	"$cli" --admin-socket "$work/$t-client.asok" ops 2>/dev/null | head -100 || true
}

# the mount serves: a file written, read back on every mount, listed, removed
serves() { # DIR...
	local d f=serves.$$.$RANDOM
	echo "still serving $f" >"$1/$f" || return 1
	for d in "$@"; do
		[[ $(cat "$d/$f") == "still serving $f" ]] || return 1
		ls "$d" | grep -qx "$f" || return 1
	done
	rm "$1/$f"
}

run_fsstress() { # TARGET NAME DIR ARGS... : one fsstress, timed, hang-checked
	local t=$1 name=$2 d=$3 t0 t1 rc=0
	shift 3
	mkdir -p "$d"
	t0=$(date +%s.%N)
	timeout "$limit" "$fsstress" -d "$d" "$@" >"$work/$t.$name.out" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')"
}

one_target() { # TARGET
	local t=$1 m r s rc secs n
	for r in ${rows//,/ }; do
		case $r in
		seeds) for s in $seeds; do
			loligo_setup "$t"; loligo_mount "$t"; m=$(mnt_of "$t")
			read -r rc secs < <(run_fsstress "$t" "seed$s" "$m/s" -p 20 -n 10000 -s "$s")
			verdict "$t" "-p 20 -n 10000 -s $s" "$rc" "$secs" $((20 * 10000)) "$m"
			teardown "$t"
		done ;;
		wide)
			loligo_setup "$t"; loligo_mount "$t"; m=$(mnt_of "$t")
			read -r rc secs < <(run_fsstress "$t" wide "$m/w" -p 64 -n 2000 -s 7)
			verdict "$t" "-p 64 -n 2000 -s 7" "$rc" "$secs" $((64 * 2000)) "$m"
			teardown "$t" ;;
		two)
			loligo_setup "$t"; loligo_mount "$t"; m=$(mnt_of "$t")
			loligo_mount "$t" "$work/${t}2.mnt"
			mkdir -p "$m/two"
			local o1 o2 rc1 rc2 secs1 secs2
			o1=$(mktemp); o2=$(mktemp)
			run_fsstress "$t" two1 "$m/two/a" -p 8 -n 5000 -s 11 >"$o1" &
			local p1=$!
			run_fsstress "$t" two2 "$work/${t}2.mnt/two/b" -p 8 -n 5000 -s 12 >"$o2" &
			local p2=$!
			wait "$p1" || true; wait "$p2" || true
			read -r rc1 secs1 <"$o1"; read -r rc2 secs2 <"$o2"; rm -f "$o1" "$o2"
			rc=$rc1; ((rc == 0)) && rc=$rc2
			n=$((secs1 > secs2 ? secs1 : secs2))
			verdict "$t" "two mounts -p 8 -n 5000 each" "$rc" "$n" $((2 * 8 * 5000)) "$m" "$work/${t}2.mnt"
			unmount "$work/${t}2.mnt" "$fuse2_pid"; fuse2_pid=
			teardown "$t" ;;
		*) bench_usage "unknown row '$r'" ;;
		esac
	done
}

verdict() { # TARGET NAME RC SECS OPS MNT...
	local t=$1 name=$2 rc=$3 secs=$4 ops=$5
	shift 5
	if ((rc == 124)); then
		row "$t" "$name" "HANG (no end in $limit s)"
		dump_hang "$t"
		failed=1
		return
	fi
	if serves "$@"; then
		row "$t" "$name" "exit $rc, $secs s, $((ops / (secs > 0 ? secs : 1))) ops/s, serving after"
	else
		row "$t" "$name" "exit $rc, $secs s, NOT SERVING after"
		failed=1
	fi
	((rc == 0)) || failed=1
}

teardown() { # TARGET: unmount, stop the MDS, forget the filesystem
	local t=$1
	unmount "$(mnt_of "$t")" "${fuse_pid[$t]}"; unset "fuse_pid[$t]"
	kill -TERM "${mds_pid[$t]}" 2>/dev/null && wait "${mds_pid[$t]}" 2>/dev/null || true
	unset "mds_pid[$t]"
	if [[ $t == rados* ]]; then
		local p
		for p in "$(fs_name_of "$t")_metadata" "$(fs_name_of "$t")_data"; do
			ceph -c "$ceph_dir/ceph.conf" osd pool rm "$p" "$p" --yes-i-really-really-mean-it >/dev/null 2>&1 || true
		done
	else
		rm -rf "${work:?}/$t.store"
	fi
	unset "mds_port[$t]"
	rm -f "$work/$t-mds.port"
}

echo "== $bench: $(nproc) CPUs, kernel $(uname -r), $(build_label "$build"), targets $targets, rows $rows," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -ra tl <<<"$targets"
for t in "${tl[@]}"; do one_target "$t"; done
echo "== $bench: table"
printf '%s\n' "${table[@]}"
exit "$failed"
