#!/usr/bin/env bash
# run-nfs-bench.sh - the NFS gateway benchmarks of docs/BENCHMARKS.md.
#
#   tools/bench/run-nfs-bench.sh BUILD_DIR [seqid|drc|drc3|subtree|all] [SECONDS]
#
# seqid: OPEN/CLOSE as ONE open-owner over one connection through
#        latency_proxy (5 ms each way = 10 ms RTT) at 1, 8, 16 and 32
#        requests in flight, NFSv4.1, NFSv4.0 and NFSv4.0 with the owner's
#        seqids pipelined (nfs_seqid_bench --pipeline), then 32 in flight
#        without the proxy.
# drc:   sustained state-changing NFSv4.0 load (OPEN/CLOSE, no added
#        latency, one connection), 1 request in flight and then 32 over 32
#        owners (pipelined), each against a gateway with nfs_drc_mode =
#        implied_ack and one with plain 120 s expiry; prints the DRC's
#        population and pinned entries over time, its lookup latency and
#        longest chain (`drc dump`), the lookups' share of the gateway's
#        CPU, and its cache misses when `perf stat` works.
# drc3:  the same measurement on the DRC's home ground: NFSv3 4 KiB random
#        WRITEs (every one through the DRC, as in knfsd) from 4 clients
#        (connections), 1 in flight each and then 16 each (pipelined),
#        implied_ack against expiry (nfs3_write_bench).
# subtree: what the subtree check (handles stay in their export) costs: an
#        NFSv3 GETATTR storm and a READ storm (4 KiB of an empty file: the
#        request's own cost) from 4 connections x 16 in flight on one file
#        of an export 4 directories deep (/st/a/b/c), with the check off
#        (nfs_subtree_check=false), on (its cached verdicts), and on with
#        nfs_subtree_check_ttl=0 (no cache: the parent walk at every request).
#
# LOLIGO_BENCH_OUT=DIR: the drc/drc3 runs also write their samples there,
# one file per run, drc-<mode>-<inflight>[v3].tsv: "seconds population pinned"
# (seconds since the load started, when the sample was taken)
# (for tools/bench/plot-bench.sh drc).
#
# Each mode starts its own loligo-mds and loligo-fuse --no-mount --nfs on
# a temp dir and ephemeral ports, and kills them at the end.
set -u
BUILD=${1:?usage: run-nfs-bench.sh BUILD_DIR [seqid|drc|all] [SECONDS]}
WHAT=${2:-all}
SECS=${3:-5}
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
BENCH=$BUILD/tools/bench/nfs_seqid_bench
BENCH3=$BUILD/tools/bench/nfs3_write_bench
PROXY=$BUILD/tools/proxy/latency_proxy
CLI=$BUILD/tools/cli/loligo
T=$(mktemp -d /tmp/loligo-nfs-bench.XXXXXX)
PIDS=()
WL=             # the benchmark client running now (bench_wait)

cleanup() {
	trap '' INT TERM   # a second signal must not cut the cleanup short
	[ -n "$WL" ] && kill -TERM "$WL" 2>/dev/null
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	[ -n "$WL" ] && kill -KILL "$WL" 2>/dev/null
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# bench_wait OUT CMD...: CMD in the background with its output in OUT, and
# wait for it: bash runs the INT/TERM trap only once its foreground command
# returns, so a benchmark client in the foreground held a signal for up to
# SECONDS (for ever if the gateway hung)
bench_wait() {
	local out=$1 st=0
	shift
	"$@" > "$out" &
	WL=$!
	wait "$WL" || st=$?
	WL=
	return $st
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_gw DIR EXTRA_OPTS... : mds + gateway; sets NFS_PORT, GW_PID, ASOK
start_gw() {
	local d=$1
	shift
	mkdir -p "$d/store"
	cat > "$d/loligo.conf" <<CONF
[global]
nfs4_grace_time = 0
store_backend = local
store_local_path = $d/store
[mds]
mds_addr = 127.0.0.1
log_file = $d/mds.log
admin_socket = $d/mds.asok
mds_keyring = $d/keyring
[client]
log_file = $d/client.log
admin_socket = $d/client.asok
client_mount_timeout = 10
client_keyring = $d/client.keyring
[nfs]
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
nfs_rpcbind = false
CONF
	"$BUILD/tools/cli/loligo" auth get-or-create client.admin --keyring "$d/keyring" -o "$d/client.keyring" 2>/dev/null ||
		{ echo "cannot make the keyrings (build the loligo CLI)"; exit 1; }
	"$MDS" -c "$d/loligo.conf" --mkfs > "$d/mkfs.out" 2>&1 || { echo "mkfs failed"; exit 1; }
	"$MDS" -c "$d/loligo.conf" --mds_port=0 --port-file "$d/mds.port" > "$d/mds.out" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [ -s "$d/mds.port" ] && break; sleep 0.1; done
	NFS_PORT=$(free_port)
	"$FUSE" -f -c "$d/loligo.conf" --client_mds_addr=127.0.0.1:$(cat "$d/mds.port") --no-mount \
		--nfs 127.0.0.1:$NFS_PORT "$@" > "$d/fuse.out" 2>&1 &
	GW_PID=$!
	PIDS+=($GW_PID)
	ASOK=$d/client.asok
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$NFS_PORT) 2>/dev/null && return 0; sleep 0.1; done
	echo "the gateway did not start"; cat "$d/fuse.out"; exit 1
}

seqid() {
	start_gw "$T/seqid"
	"$PROXY" --target "$NFS_PORT" --delay-ms 5 --port-file "$T/proxy.port" > /dev/null &
	PIDS+=($!)
	for _ in $(seq 50); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
	local pp
	pp=$(cat "$T/proxy.port")
	echo "== seqid: one open-owner, OPEN+CLOSE, 10 ms RTT (latency_proxy 5 ms each way), ${SECS}s per point"
	printf "%-6s %-9s %12s %14s\n" minor inflight ops/s mean_lat_ms
	for m in 1 0 0p; do
		for k in 1 8 16 32; do
			bench_wait "$T/bench.out" "$BENCH" --port "$pp" --minor ${m%p} --inflight $k --seconds "$SECS" \
				--tag "sb$m-$k" $([ $m = 0p ] && echo --pipeline)
			sed -E 's/.*inflight=([0-9]+).*ops_per_s=([0-9.]+) mean_latency_ms=([0-9.]+)/\1 \2 \3/' "$T/bench.out" |
				awk -v m="$m" '{ printf "%-6s %-9s %12s %14s\n", "4." m, $1, $2, $3 }'
		done
	done
	echo "(4.0p: --pipeline, seqids sent without waiting; the gateway orders them itself)"
	echo "== the same without added latency, 32 in flight (server-side cost of the 4.0 ordering)"
	for m in 1 0p; do
		bench_wait "$T/bench.out" "$BENCH" --port "$NFS_PORT" --minor ${m%p} --inflight 32 --seconds "$SECS" \
			--tag "sd$m" $([ $m = 0p ] && echo --pipeline)
		sed -E 's/.*ops_per_s=([0-9.]+) mean_latency_ms=([0-9.]+)/\1 \2/' "$T/bench.out" |
			awk -v m="$m" '{ printf "%-6s %-9s %12s %14s\n", "4." m, 32, $1, $2 }'
	done
}

# drc_one MODE INFLIGHT [v3]: the gateway with nfs_drc_mode=MODE under 4.0
# OPEN/CLOSE load, INFLIGHT requests on the wire (1: one at a time, a client
# that waits for each reply; 32: pipelined over 32 owners), or with "v3"
# under NFSv3 4 KiB random WRITEs from 4 connections, INFLIGHT on each
drc_one() {
	local mode=$1 k=$2 v3=${3:-} d=$T/drc-$1-$2${3:-} i pop perfpid=
	start_gw "$d" --nfs_drc_mode=$mode
	# CPU cache misses need hardware counters (absent in most VMs): best effort
	if perf stat -e cache-misses -p "$GW_PID" -o "$d/perf.txt" -- sleep 0.1 >/dev/null 2>&1 &&
	   ! grep -q "not supported" "$d/perf.txt"; then
		perf stat -e cache-misses,cache-references -p "$GW_PID" -o "$d/perf.txt" -- sleep "$SECS" \
			> /dev/null 2>&1 &
		perfpid=$!
	else
		rm -f "$d/perf.txt"
	fi
	local cpu0
	cpu0=$(awk '{ print $14 + $15 }' /proc/$GW_PID/stat)
	if [ -n "$v3" ]; then
		"$BENCH3" --port "$NFS_PORT" --conns 4 --inflight "$k" --seconds "$SECS" --tag "drc3-$mode" \
			> "$d/bench.out" &
	else
		"$BENCH" --port "$NFS_PORT" --minor 0 --inflight "$k" --owners "$k" --seconds "$SECS" --tag "drc-$mode" \
			> "$d/bench.out" &
	fi
	local bp=$! tsv=/dev/null s
	WL=$bp          # stopped by the trap too
	if [ -n "${LOLIGO_BENCH_OUT:-}" ]; then
		mkdir -p "$LOLIGO_BENCH_OUT"
		tsv=$LOLIGO_BENCH_OUT/drc-$mode-$k$v3.tsv
		echo "# seconds population pinned ($mode, $k in flight${v3:+ per connection, NFSv3}) load_secs=$SECS" > "$tsv"
	fi
	pop=""
	local t0
	t0=$(date +%s.%N)
	for i in $(seq 1 "$SECS"); do
		sleep 1
		s=$("$CLI" --format json daemon "$ASOK" drc dump 2>/dev/null |
			python3 -c 'import json,sys; d=json.load(sys.stdin); print("%d/%d" % (d["population"], d.get("pinned", 0)))')
		pop="$pop $s"
		# the time of the sample (a loaded machine stretches the 1 s steps)
		echo "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') ${s%/*} ${s#*/}" >> "$tsv"
	done
	wait $bp
	WL=
	[ -n "$perfpid" ] && wait $perfpid
	local cpu1
	cpu1=$(awk '{ print $14 + $15 }' /proc/$GW_PID/stat)
	"$CLI" --format json daemon "$ASOK" drc dump > "$d/drc.json" 2>/dev/null
	python3 - "$mode" "$k" "$d/drc.json" "$d/bench.out" "$d/perf.txt" "$pop" "$(( (cpu1 - cpu0) ))" "$(getconf CLK_TCK)" <<'PY'
import json, re, sys
mode, k, dj, bo, pf, pop, ticks, hz = sys.argv[1:9]
cpu_ns = int(ticks) * 1e9 / int(hz)
d = json.load(open(dj))
ops = re.search(r"ops_per_s=([0-9.]+)", open(bo).read()).group(1)
l = d["lookup_ns"]
cm = "n/a"
try:
    t = open(pf).read()
    m = re.search(r"([0-9,]+)\s+cache-misses", t)
    if m: cm = m.group(1)
except OSError:
    pass
share = 100.0 * l['sum_ns'] / cpu_ns if cpu_ns else 0
print(f"{mode:12s} inflight={k:>2s} ops/s={ops:>9s} population/pinned(1s samples)={pop.strip()} "
      f"final={d['population']} longest_chain={d['longest_chain']} lookup avg={l['avg_ns']}ns "
      f"p50={l['p50_ns']}ns p99={l['p99_ns']}ns lookups={l['count']} "
      f"lookup_cpu_share={share:.2f}% of the gateway's {cpu_ns/1e9:.1f}s CPU "
      f"evictions={d['evictions']} size_skipped_pinned={d.get('size_skipped_pinned', 'n/a')} "
      f"gw_cache_misses={cm}")
PY
	kill -TERM "$GW_PID" 2>/dev/null
}

drc() {
	echo "== drc: NFSv4.0 OPEN/CLOSE over one connection, ${SECS}s per run:"
	echo "   1 in flight (a client that waits for each reply), then 32 in flight over 32 owners (pipelined)"
	for k in 1 32; do
		drc_one implied_ack $k
		drc_one expiry $k
	done
}

drc3() {
	echo "== drc3: NFSv3 4 KiB random WRITEs (UNSTABLE), 4 connections, ${SECS}s per run:"
	echo "   1 in flight per connection (waits for each reply), then 16 per connection (pipelined)"
	for k in 1 16; do
		drc_one implied_ack $k v3
		drc_one expiry $k v3
	done
}

subtree() {
	local d=$T/subtree what op out
	echo "== subtree: NFSv3 storms on /st/a/b/c/<file>, 4 connections x 16 in flight, ${SECS}s per run"
	start_gw "$d"
	"$BENCH3" --port "$NFS_PORT" --export /st/a/b/c --mkdirs || exit 1
	for what in off on nocache; do
		kill -TERM "$GW_PID"
		wait "$GW_PID" 2>/dev/null
		case $what in
		off) opt=--nfs_subtree_check=false ;;
		on) opt=--nfs_subtree_check=true ;;
		nocache) opt=--nfs_subtree_check_ttl=0 ;;
		esac
		NFS_PORT=$(free_port)
		"$FUSE" -f -c "$d/loligo.conf" --client_mds_addr=127.0.0.1:$(cat "$d/mds.port") --no-mount \
			--nfs 127.0.0.1:$NFS_PORT "--nfs_exports=id=1,path=/,rw,no_root_squash,insecure;id=2,path=/st/a/b/c,rw,no_root_squash,insecure" \
			$opt > "$d/fuse-$what.out" 2>&1 &
		GW_PID=$!
		PIDS+=($GW_PID)
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$NFS_PORT) 2>/dev/null && break; sleep 0.1; done
		for op in getattr read; do
			out=$d/bench-$what-$op.out
			bench_wait "$out" "$BENCH3" --port "$NFS_PORT" --conns 4 --inflight 16 --seconds "$SECS" \
				--export /st/a/b/c --op $op --tag "st-$op" || { echo "the $op storm failed"; exit 1; }
			printf '   check %-8s %-8s %s\n' "$what" "$op" "$(sed -E 's/^RESULT op=[a-z]+ export=[^ ]+ //' "$out")"
		done
	done
}

case $WHAT in
seqid) seqid ;;
drc) drc ;;
drc3) drc3 ;;
subtree) subtree ;;
all) seqid; drc; drc3; subtree ;;
*) echo "unknown: $WHAT"; exit 2 ;;
esac
