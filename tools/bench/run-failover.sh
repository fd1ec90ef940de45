#!/usr/bin/env bash
# run-failover.sh - how long a failover of rank 0 takes, and what an
# application sees of it (issue 19).
#
#   tools/bench/run-failover.sh [--build DIR] [--rounds N] [--threads T]
#                               [--backends "local rados"] [--signals "KILL STOP"]
#                               [--mds-args "--mds_beacon_interval=1 --mds_beacon_grace=5"]
#                               [--standby-replay]
#
# Each run is the failover case of tests/e2e/test_fuse_crash.c: two
# loligo-mds daemons on one filesystem (an active and a standby), a FUSE
# mount given both addresses, a T-thread namespace workload (create + write
# + fsync, mkdir, rename, link, unlink, rmdir) whose every acknowledged
# operation is logged, and N rounds in which the active gets the signal:
#   KILL  kill -9; the standby takes over (on the local store at once: the
#         dead holder's host lock is free; on RADOS after mds_beacon_grace)
#   STOP  SIGSTOP; the standby waits out the grace, fences the holder (on
#         the local store: kills it, see mds/mdsmap.c) and takes over; then
#         SIGCONT: a deposed holder that wakes must exit without writing
# then the killed daemon comes back as the standby.  At the end a checker
# compares the tree with the acknowledged operations (0 lost, 0 doubled).
# Reported per backend and signal: the time from the signal to the new
# active serving (its port file) and to the first operation acknowledged
# after it, the longest any syscall took, operations acknowledged.
# RADOS runs start a single-node Ceph cluster (../shared/ceph) per run.
# --standby-replay: the standby follows the journal (mds_standby_replay);
# also reported then: journal entries the new active's cache held and the
# most it applied at a takeover.
#
# No journal holds here (LOLIGO_FAILOVER_HOLD=0): the suite's own run holds
# the journal on purpose, which stalls syscalls by design.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$top/build rounds=10 threads=8 backends="local rados" signals="KILL STOP"
mds_args="--mds_beacon_interval=1 --mds_beacon_grace=5" sreplay=0
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--threads) threads=$2; shift ;;
	--backends) backends=$2; shift ;;
	--signals) signals=$2; shift ;;
	--mds-args) mds_args=$2; shift ;;
	--standby-replay) sreplay=1 ;;
	-h|--help) sed -n '2,31p' "$0"; exit 0 ;;
	*) echo "run-failover: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
bin=$build/tests/test_fuse_crash
[[ -x $bin ]] || { echo "run-failover: $bin missing: build first" >&2; exit 1; }
out=$(mktemp -d /tmp/run-failover.XXXXXX)
trap 'rm -rf "$out"' EXIT

run() { # backend signal -> $out/$backend.$signal.log
	local be=$1 sig=$2 log=$out/$1.$2.log
	local -a env=(LOLIGO_BUILD_DIR="$build" LOLIGO_SOURCE_DIR="$top" CK_RUN_CASE=failover
		CK_TIMEOUT_MULTIPLIER=20 LOLIGO_FAILOVERS="$rounds" LOLIGO_FAILOVER_THREADS="$threads"
		LOLIGO_FAILOVER_HOLD=0 LOLIGO_FAILOVER_SIGNAL="$sig" LOLIGO_FAILOVER_MDS_ARGS="$mds_args"
		LOLIGO_FAILOVER_STANDBY_REPLAY="$sreplay")
	if [[ $be == rados ]]; then
		env "${env[@]}" LOLIGO_SUITE_TIMEOUT=3000 bash "$top/tests/e2e/fuse_suite_rados.sh" failover-bench "$bin" \
			> "$log" 2>&1
	else
		env "${env[@]}" timeout 3000 "$bin" > "$log" 2>&1
	fi
}

summary() { # log -> one table row
	python3 - "$1" "$2" "$3" <<'PY'
import re, statistics, sys
log, be, sig = sys.argv[1:4]
text = open(log).read()
serve = [float(x) for x in re.findall(r"serves ([0-9.]+) s after", text)]
ack = [float(x) for x in re.findall(r"first op acknowledged after ([0-9.]+) s", text)]
m = re.search(r"(\d+) ops acknowledged by (\d+) threads.*longest syscall ([0-9.]+) s; (\d+) stopped", text)
ok = "every acknowledged operation is there exactly once" in text and "100%: Checks" in text
sr = [(int(a), int(b)) for a, b in re.findall(r"standby-replay held (\d+) journal entries, applied (\d+)", text)]
if sr:
    sig += f" (standby-replay: cache held {min(a for a, b in sr)}-{max(a for a, b in sr)} entries, applied at most {max(b for a, b in sr)} at a takeover)"
if not serve or not m:
    print(f"| {be} | SIG{sig} | failed: see the log | | | | |")
    sys.exit(0)
med = statistics.median(serve)
print(f"| {be} | SIG{sig} | {len(serve)} | {med:.2f} / {max(serve):.2f} | {max(ack):.2f} | {float(m.group(3)):.2f} "
      f"| {m.group(1)} | {'0 lost, 0 doubled' if ok else 'CHECKER FAILED'} | {m.group(4)} |")
PY
}

echo "# run-failover.sh: $rounds rounds, $threads threads, MDS: $mds_args$( ((sreplay)) && echo ", standby-replay") ($(date -u +%F), $(git -C "$top" rev-parse --short HEAD))"
echo "| store | signal | failovers | to serve, median / max (s) | to first ack, max (s) | longest syscall (s) | ops acknowledged | checker | holders killed by successor |"
echo "|---|---|---|---|---|---|---|---|---|"
rc=0
for be in $backends; do
	for sig in $signals; do
		run "$be" "$sig" || rc=1
		summary "$out/$be.$sig.log" "$be" "$sig"
		if ! grep -q "100%: Checks" "$out/$be.$sig.log"; then
			rc=1
			tail -20 "$out/$be.$sig.log" >&2
		fi
	done
done
exit $rc
