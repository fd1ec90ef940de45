#!/usr/bin/env bash
# bench_mdstorm.sh BUILD_DIR - tools/bench/run-mdstorm.sh as a test:
#
#  1. `--contended --locking before` (the mode that once deadlocked
#     loligo-fuse: issue 18) with small parameters runs to completion under a
#     watchdog and reports its RESULT line with no errors;
#  2. a SIGTERM to the driver alone in the middle of the storm stops it at
#     once and leaves no loligo process, no fuse.loligo mount and no temp dir;
#  3. the same with loligo-fuse hung (SIGSTOP: what a deadlocked client looks
#     like from outside), which is how a driver killed by `timeout` once left
#     a loligo-fuse and its mount behind;
#  4. SIGINT to the driver's process group, as ^C sends it.
# (`timeout -s TERM` signals the driver and then its process group: cases 2
# and 4 between them.)
#
# The waits are for events (the driver's own "== storm" line, its exit); the
# bounds only turn a hang into a failure.  Exit 77 (skipped) without FUSE,
# jq, a C compiler or ../shared/bench/mdstorm.c.
set -uo pipefail
set -m          # the driver in its own process group, SIGINT/SIGTERM not ignored
build=$(cd "${1:?usage: bench_mdstorm.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
drv=$src/tools/bench/run-mdstorm.sh
export LOLIGO_BUILD_DIR=$build
storm=(--contended --locking before --threads 8 --files 300)

[[ -e /dev/fuse ]] && command -v fusermount3 >/dev/null && command -v jq >/dev/null &&
	command -v cc >/dev/null || { echo "bench_mdstorm: needs /dev/fuse, fusermount3, jq, cc: skipped"; exit 77; }
shared=$(cd "$src/../shared" 2>/dev/null && pwd || true)
if [[ -z $shared ]]; then
	main_tree=$(git -C "$src" worktree list --porcelain 2>/dev/null | sed -n '1s/^worktree //p')
	[[ -n $main_tree ]] && shared=$(cd "$main_tree/../shared" 2>/dev/null && pwd || true)
fi
[[ -n $shared && -f $shared/bench/mdstorm.c ]] || { echo "bench_mdstorm: no ../shared/bench/mdstorm.c: skipped"; exit 77; }

tmp=$(mktemp -d /tmp/loligo-bench-mdstorm-test.XXXXXX)
fail=0
bad() { echo "FAIL: $*"; fail=1; }
trap 'rm -rf "$tmp"' EXIT

# what the driver run whose output is $1 left behind (nothing: returns 0)
left_behind() {
	local out=$1 work left=0
	work=$(grep -o '/tmp/loligo-mdstorm\.[A-Za-z0-9]*' "$out" | head -1)
	[[ -n $work ]] || { echo "no temp dir named in $out"; return 1; }
	if pgrep -af -- "$work" | grep -v pgrep; then echo "processes of $work left"; left=1; fi
	if grep " $work" /proc/mounts; then echo "mounts of $work left"; left=1; fi
	if [[ -e $work ]]; then echo "$work left"; left=1; fi
	if ((left)); then
		# do not leave it for the next test: by pid and mount point only
		for p in $(pgrep -f -- "$work"); do kill -KILL "$p" 2>/dev/null; done
		for m in $(awk -v w="$work" 'index($2, w) == 1 {print $2}' /proc/mounts); do fusermount3 -uz "$m"; done
		rm -rf "$work"
	fi
	return $left
}

# until FILE has a line matching RE, or PID exited (false), bounded
wait_line() { # FILE RE PID
	for _ in $(seq 1 1200); do
		grep -q -- "$2" "$1" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

echo "== 1: the before-mode storm runs to completion"
timeout -s KILL 300 "$drv" "${storm[@]}" --secs 3 >"$tmp/full.out" 2>&1
rc=$?
((rc == 0)) || { bad "run-mdstorm.sh exited $rc (137: the watchdog killed it: a hang)"; tail -20 "$tmp/full.out"; }
res=$(grep '^RESULT mdstorm contended=1 locking=before' "$tmp/full.out" | tail -1)
[[ -n $res ]] || bad "no RESULT line for locking=before"
[[ $res == *" errors=0 "* ]] || bad "the storm had errors: $res"
[[ $res =~ stat_ops_s=[1-9] ]] || bad "no stats done: $res"
left_behind "$tmp/full.out" || bad "a completed run left something behind"

term_mid_run() { # NAME HANG SIGNAL TARGET(driver|group)
	local name=$1 hang=$2 sig=$3 target=$4 out=$tmp/${1%%:*}.out pid fpid rc work
	echo "== $name"
	"$drv" "${storm[@]}" --secs 120 >"$out" 2>&1 &
	pid=$!
	wait_line "$out" '^== storm, locking before' "$pid" || { bad "$name: the storm never started"; tail -20 "$out"; }
	work=$(grep -o '/tmp/loligo-mdstorm\.[A-Za-z0-9]*' "$out" | head -1)
	# the storm's own process runs (the driver waits for it): the signal
	# must not wait for the storm's end
	for _ in $(seq 1 600); do pgrep -f -- "$work/mdstorm $work/mnt/storm .* nocreate" >/dev/null && break; sleep 0.1; done
	pgrep -f -- "$work/mdstorm $work/mnt/storm .* nocreate" >/dev/null || bad "$name: no storm process"
	if ((hang)); then
		fpid=$(pgrep -f -- "loligo-fuse .*$work/mnt" | head -1)
		[[ -n $fpid ]] && kill -STOP "$fpid"
	fi
	if [[ $target == group ]]; then kill -"$sig" -- -"$pid"; else kill -"$sig" "$pid"; fi
	# the driver must stop by itself, long before the storm's 120 s are
	# over (it gives a hung loligo-fuse 10 s, then SIGKILL)
	for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		bad "$name: the driver still runs 60 s after SIG$sig"
		kill -KILL "$pid"
	fi
	wait "$pid"
	rc=$?
	((rc == 130)) || bad "$name: the driver exited $rc after SIG$sig, not 130"
	left_behind "$out" || bad "$name: a driver stopped by SIG$sig left something behind"
}
term_mid_run "2: SIGTERM to the driver mid-storm" 0 TERM driver
term_mid_run "3: SIGTERM to the driver mid-storm, loligo-fuse hung" 1 TERM driver
term_mid_run "4: SIGINT to its process group (^C) mid-storm" 0 INT group

((fail)) && exit 1
echo "bench_mdstorm: ok"
