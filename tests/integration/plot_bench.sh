#!/usr/bin/env bash
# plot_bench.sh - tools/bench/plot-bench.sh draws each of its plots from the
# benchmarks' own output formats (issue 11.8): RESULT lines as
# run-mdstorm.sh writes them, loligo-fuse's Prometheus text, the DRC
# samples of run-nfs-bench.sh.  Small inputs in those formats, written
# here; each PNG must be a real PNG of a plausible size, and bad input must
# fail with a message, not draw an empty picture.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PLOT=$SRC/tools/bench/plot-bench.sh
fail() { echo "FAIL: $*"; exit 1; }
command -v gnuplot > /dev/null || fail "gnuplot missing (apt-get install gnuplot-nox)"
[ -x "$PLOT" ] || fail "$PLOT missing"
T=$(mktemp -d /tmp/loligo-plot.XXXXXX)
trap 'rm -rf "$T"' EXIT
png_ok() { # FILE: PNG signature and more than an empty canvas
	[ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$1 is not a PNG"
	[ "$(stat -c %s "$1")" -gt 10000 ] || fail "$1 is only $(stat -c %s "$1") bytes"
}

holds() { # MODE SUBMIT_P99 HANDLE_P99
	local s
	for s in submit_request do_request handle_reply replay session other; do
		printf ' hold_count_%s=%s hold_p50_us_%s=0.1 hold_p99_us_%s=%s hold_max_us_%s=9' "$s" \
			"$([ $s = replay ] || [ $s = other ] && echo 0 || echo 1000)" "$s" "$s" \
			"$(case $s in submit_request) echo "$2" ;; handle_reply) echo "$3" ;; *) echo 1.5 ;; esac)" "$s"
	done
}
{
	echo "RESULT mdstorm-local threads=32 secs=20 files=5000 stat_ops_s=24495 stat_p99_us=4.8 readdir_s=246.2 errors=0"
	echo "RESULT mdstorm contended=1 locking=normal threads=32 secs=20 files=5000 stat_ops_s=3104 stat_p99_us=16121.9" \
	     "readdir_s=31 errors=0 mds_requests=195329 mds_requests_s=9766 mds_cpu_us_per_req=21.3" \
	     "client_cpu_us_per_req=75.8$(holds normal 2.016 0)"
	echo "RESULT mdstorm contended=1 locking=before threads=32 secs=20 files=5000 stat_ops_s=2920 stat_p99_us=28049.4" \
	     "readdir_s=29 errors=0 mds_requests=185580 mds_requests_s=9279 mds_cpu_us_per_req=21.8" \
	     "client_cpu_us_per_req=72.2$(holds before 75.776 167.936)"
} > "$T/result.txt"
"$PLOT" mdstorm "$T/mdstorm.png" "$T/result.txt" > "$T/out" 2>&1 || fail "mdstorm: $(cat "$T/out")"
png_ok "$T/mdstorm.png"

for m in normal before; do
	for s in submit_request do_request handle_reply session; do
		# cumulative bucket counts: normal peaks in the first bucket, before at 2^13 ns
		awk -v n="loligo_mds_client_hold_${s}_seconds" -v peak=$([ $m = normal ] && echo 10 || echo 13) 'BEGIN {
			printf "# TYPE %s histogram\n", n
			for (k = 10; k <= 36; k++) {
				d = k - peak; c += (d < 0 ? 0 : int(100000 / (1 + d * d * d)))
				printf "%s_bucket{daemon=\"client.admin\",le=\"%.9g\"} %d\n", n, 2 ^ k / 1e9, c
			}
			printf "%s_bucket{daemon=\"client.admin\",le=\"+Inf\"} %d\n%s_count{daemon=\"client.admin\"} %d\n", n, c, n, c
		}'
	done > "$T/metrics-$m.txt"
done
"$PLOT" hold "$T/hold.png" "$T/metrics-normal.txt=normal" "$T/metrics-before.txt" > "$T/out" 2>&1 ||
	fail "hold: $(cat "$T/out")"
png_ok "$T/hold.png"

mkdir "$T/drc"
for f in expiry-1 implied_ack-1 expiry-16v3 implied_ack-16v3; do
	for i in 1 2 3 4 5; do
		case $f in expiry*) echo "$i.1 $((i * 4000)) 1" ;; *) echo "$i.05 $((i % 3 + 1)) 0" ;; esac
	done > "$T/drc/drc-$f.tsv"
done
"$PLOT" drc "$T/drc.png" "$T/drc" > "$T/out" 2>&1 || fail "drc: $(cat "$T/out")"
png_ok "$T/drc.png"
echo "PASS: mdstorm, hold and drc plots drawn from RESULT lines, Prometheus text and DRC samples"

# bad input: a clear message and exit 1, no picture
echo "nothing here" > "$T/empty.txt"
"$PLOT" mdstorm "$T/bad.png" "$T/empty.txt" > "$T/out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "no 'RESULT mdstorm' line" "$T/out" || fail "mdstorm without RESULT lines: exit $rc: $(cat "$T/out")"
"$PLOT" drc "$T/bad.png" "$T" > "$T/out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "no drc-\*.tsv" "$T/out" || fail "drc without samples: exit $rc: $(cat "$T/out")"
"$PLOT" hold "$T/bad.png" "$T/nonexistent.txt" > "$T/out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "cannot read" "$T/out" || fail "hold of a missing file: exit $rc: $(cat "$T/out")"
"$PLOT" frob "$T/bad.png" > "$T/out" 2>&1; rc=$?
[ $rc = 2 ] || fail "unknown plot: exit $rc, want 2"
[ -e "$T/bad.png" ] && fail "a failed plot left $T/bad.png"
echo "PASS: bad input is refused with a message (exit 1; 2 for usage) and draws nothing"
echo "ALL PASSED"
