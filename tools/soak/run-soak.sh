#!/usr/bin/env bash
# run-soak.sh - the never-hangs soak (issue 24): the stress workload of
# tests/e2e/test_fuse_stress.c (20 processes on two mounts mixing writes,
# O_DIRECT, mmap, truncates, fallocate, fsyncs of files and directories,
# renames, links, unlinks...) with the MDS and a client killed -9 during
# each run, checked for acknowledged data (every private file's last
# fsync'd version is there) and for stalls (a watchdog dumps every thread
# of loligo-fuse and loligo-mds and fails the run), alternating with the
# namespace crash test (tests/e2e/test_fuse_crash.c: every acknowledged
# create, mkdir, rename, link, unlink and rmdir exactly once after MDS
# kill -9s), for as long as asked.  A benchmark-like tool for our own
# runs, not a check: ctest runs the bounded forms.
#
#   tools/soak/run-soak.sh [--minutes N] [--seconds S] [--kills K]
#                          [--no-client-kills] [--rados] [--build DIR] [--logs DIR]
#
#   --minutes N        how long (default 30)
#   --seconds S        each stress run's length (default 120)
#   --kills K          kill -9s per stress run, MDS and client alternately (default 6)
#   --no-client-kills  kill only the MDS
#   --rados            on a real single-node Ceph cluster (../shared/ceph), the
#                      cluster started once per run by tests/e2e/fuse_suite_rados.sh
#   --build DIR        the build tree (default ./build)
#   --logs DIR         where failed runs' logs go (default /tmp/loligo-soak.<date>)
#
# Prints one line per run and a summary: runs, operations, kills, failures.
# Everything started is stopped on exit (the suites clean up after
# themselves; a run that outlives its bound is killed with its process group).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

minutes=30 seconds=120 kills=6 client_kills=1 rados=0 build=$top/build
logs=/tmp/loligo-soak.$(date +%Y%m%d-%H%M%S)
while (($#)); do
	case $1 in
	--minutes) minutes=$2; shift ;;
	--seconds) seconds=$2; shift ;;
	--kills) kills=$2; shift ;;
	--no-client-kills) client_kills=0 ;;
	--rados) rados=1 ;;
	--build) build=$2; shift ;;
	--logs) logs=$2; shift ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "run-soak: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
for b in tests/test_fuse_stress tests/test_fuse_crash client/fuse/loligo-fuse mds/loligo-mds; do
	[[ -x $build/$b ]] || { echo "run-soak: $build/$b is missing: build first (ninja -C $build)" >&2; exit 2; }
done
mkdir -p "$logs"

end=$(( $(date +%s) + minutes * 60 ))
runs=0 failed=0 ops=0 killed=0 crash_runs=0 crash_failed=0
child=0
stop() {
	if ((child)); then kill -TERM -- "-$child" 2>/dev/null; wait "$child" 2>/dev/null; fi
	echo "run-soak: interrupted" >&2
	exit 130
}
trap stop INT TERM

# run_one LOG CMD...: in a process group of its own, bounded
run_one() {
	local log=$1
	shift
	setsid "$@" > "$log" 2>&1 &
	child=$!
	wait "$child"
	local rc=$?
	child=0
	return $rc
}

export LOLIGO_BUILD_DIR=$build LOLIGO_SOURCE_DIR=$top
while (( $(date +%s) < end )); do
	runs=$((runs + 1))
	log=$logs/stress.$runs.log
	env=(LOLIGO_STRESS_SECONDS="$seconds" LOLIGO_STRESS_KILLS="$kills" CK_DEFAULT_TIMEOUT=$((seconds * 4 + 600))
	     LOLIGO_SUITE_TIMEOUT=$((seconds * 4 + 800)))
	((client_kills)) && env+=(LOLIGO_STRESS_KILL_CLIENT=1)
	t0=$(date +%s)
	if ((rados)); then
		run_one "$log" env "${env[@]}" timeout $((seconds * 4 + 900)) bash "$top/tests/e2e/fuse_suite_rados.sh" soak "$build/tests/test_fuse_stress"
	else
		run_one "$log" env "${env[@]}" timeout $((seconds * 4 + 900)) "$build/tests/test_fuse_stress"
	fi
	rc=$?
	n=$(grep -o 'stress: 20 processes, [0-9]* operations' "$log" | awk '{s += $4} END {print s + 0}')
	k=$(grep -c 'stress: kill -9 of' "$log")
	ops=$((ops + n)) killed=$((killed + k))
	if ((rc)); then
		failed=$((failed + 1))
		echo "run $runs: stress FAILED (exit $rc) after $(( $(date +%s) - t0 )) s; log: $log"
		grep -E 'watchdog:|checker:|:F:|:E:' "$log" | head -5
	else
		echo "run $runs: stress ok, $n operations, $k kills -9, $(( $(date +%s) - t0 )) s"
		rm -f "$log"
	fi
	(( $(date +%s) < end )) || break
	crash_runs=$((crash_runs + 1))
	log=$logs/crash.$crash_runs.log
	if run_one "$log" env LOLIGO_CRASH_SEED="$RANDOM" timeout 900 "$build/tests/test_fuse_crash"; then
		echo "run $runs: namespace crash test ok"
		rm -f "$log"
	else
		crash_failed=$((crash_failed + 1))
		echo "run $runs: namespace crash test FAILED; log: $log"
		grep -E ':F:|:E:|checker' "$log" | head -5
	fi
done
echo
echo "soak: $minutes min$( ((rados)) && echo ' on RADOS'): $runs stress runs ($ops operations, $killed kills -9 of the MDS" \
     "and clients, $failed failed), $crash_runs namespace crash runs ($crash_failed failed)"
((failed || crash_failed)) && exit 1
exit 0
