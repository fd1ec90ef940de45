#!/usr/bin/env bash
# run-mdstorm.sh - the metadata storm of ../shared/bench/mdstorm.c on a loligo
# FUSE mount and on a plain local directory, in the same run, plus the client
# mutex hold times from the loligo-fuse admin socket (`perf dump`).
#
#   tools/bench/run-mdstorm.sh [--build DIR] [--threads N] [--secs S] [--files N]
#                              [--stats-per-readdir N] [--perf-record FILE]
#                              [--mds-perf-record FILE] [--contended]
#                              [--locking normal|before|both]
#                              [--fuse-opt OPT,...] [--set OPTION=VALUE]... [--keep]
#                              [--out DIR]
#
#   --build DIR        build tree with mds/loligo-mds and client/fuse/loligo-fuse
#                      (default: $LOLIGO_BUILD_DIR, else ./build); built here if missing
#   --threads/--secs/--files   storm shape (default 32, 20, 5000)
#   --stats-per-readdir N      stat()s per full readdir and thread (default 100)
#   --perf-record FILE record loligo-fuse with `perf record -g` during the loligo storm
#   --mds-perf-record FILE  the same for loligo-mds
#   --contended        every stat and every readdir reaches the MDS: kernel entry/attr
#                      timeouts 0 and no kernel readdir cache, the client's own caches
#                      bypassed (client_{caps,attr,entry,negative}_timeout=0,
#                      fuse_cache_readdir=false); implies --no-local
#   --locking MODE     normal (default): the client as it is; before: the client mutex
#                      held across request encoding/sending and reply handling
#                      (client_mds_locking=before, the Linux client before its series);
#                      both: the storm once in each mode on the same filesystem
#   --fuse-opt OPTS    extra -o options for loligo-fuse
#   --set OPT=VAL      a config override for loligo-fuse (--OPT=VAL), repeatable
#   --keep             keep the temp dir (logs, perf dumps) instead of removing it
#   --out DIR          also write the run's machine-readable results to DIR (for
#                      tools/bench/plot-bench.sh): result.txt (the RESULT lines),
#                      metrics-<mode>.txt (loligo-fuse's Prometheus text after each
#                      storm: the hold-time histograms with their buckets)
#   --no-local         skip the local-directory run (quick experiments only)
#   --writer           two clients: a second loligo-fuse mount (DIR/mnt2) creates and
#                      removes files in the storm's directory (tools/bench/churn.c) all
#                      through the storm, so the storming mount's cached listing and
#                      names are revoked all the time (caps, mds/locker.c)
#
# Everything runs on a temp dir with an ephemeral MDS port; the trap unmounts
# and stops both daemons whatever happens, at once on SIGTERM or SIGINT to
# this script alone (the workloads run in the background and the script
# waits for them: bash runs a trap only once its foreground command is done,
# and a storm stuck on a deadlocked client is never done), and kills what
# does not stop within 10 s (a deadlocked loligo-fuse, a stuck storm).  The last lines are a summary:
#   SUMMARY local  stat_ops_s=... p50_us=... p99_us=... readdir_s=...
#   SUMMARY loligo stat_ops_s=... p50_us=... p99_us=... readdir_s=...
#   SUMMARY create files_s=...
#   SUMMARY hold-create|hold-storm <section> count=... p50_us=... p99_us=... max_us=...
#   SUMMARY cpu-<mode> thread=<name> us_per_req=...   (loligo-fuse's CPU by thread per MDS request)
#   SUMMARY handler-cpu-<mode> <family> count=.. avg_us=.. p99_us=.. us_per_req=..
#          (with --set fuse_op_cpu=true: CPU inside the FUSE handlers, by request family)
#   with --writer also, per locking mode:
#   SUMMARY writer-<mode> ops_s=... p50_us=... p99_us=...      (creates + unlinks on mount 2)
#   SUMMARY caps-<mode> revokes_s=... lease_revokes_s=... revoke_p50_us=... revoke_p99_us=... acks_late=...
# (hold-create: client mutex hold times while $THREADS threads create the
# files, one MDS request each; hold-storm: during the stat/readdir storm)
# and the machine-readable lines: the local directory's (when it ran)
#   RESULT mdstorm-local threads=.. secs=.. files=.. stat_ops_s=.. stat_p99_us=.. readdir_s=..
# and, per locking mode, one (the last lines of the run):
#   RESULT mdstorm contended=0|1 locking=normal|before threads=.. secs=.. files=..
#          stat_ops_s=.. stat_p99_us=.. readdir_s=.. mds_requests_s=N
#          mds_cpu_us_per_req=.. client_cpu_us_per_req=.. (loligo-mds / loligo-fuse
#          CPU time during the storm per MDS request: less sensitive to other load)
#          hold_count_<section>=.. hold_p50_us_<section>=.. hold_p99_us_<section>=X
#          hold_max_us_<section>=.. (every client-mutex section: submit_request,
#          do_request, handle_reply, replay, session, other)
#          [writer_ops_s=.. revokes_s=.. revoke_p50_us=.. revoke_p99_us=..] (--writer)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=run-mdstorm
# shellcheck source=tools/bench/lib-local.sh
. "$here/lib-local.sh"
top=$(cd "$here/../.." && pwd)
# ../shared beside the tree; from a linked worktree, beside the main one
shared=$(cd "$top/../shared" 2>/dev/null && pwd || true)
if [[ -z $shared ]]; then
	main_tree=$(git -C "$top" worktree list --porcelain 2>/dev/null | sed -n '1s/^worktree //p')
	[[ -n $main_tree ]] && shared=$(cd "$main_tree/../shared" 2>/dev/null && pwd || true)
fi

build=${LOLIGO_BUILD_DIR:-$top/build} threads=32 secs=20 files=5000 spr=100
perf_out= mds_perf_out= fuse_opts= keep=0 sets=() local=1 contended=0 locking=normal out= writer=0
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--threads) threads=$2; shift ;;
	--secs) secs=$2; shift ;;
	--files) files=$2; shift ;;
	--stats-per-readdir) spr=$2; shift ;;
	--perf-record) perf_out=$2; shift ;;
	--mds-perf-record) mds_perf_out=$2; shift ;;
	--contended) contended=1; local=0 ;;
	--locking) locking=$2; shift ;;
	--fuse-opt) fuse_opts=$2; shift ;;
	--set) sets+=("--$2"); shift ;;
	--keep) keep=1 ;;
	--out) out=$2; shift ;;
	--no-local) local=0 ;;
	--writer) writer=1 ;;
	-h|--help) sed -n '2,65p' "$0"; exit 0 ;;
	*) echo "run-mdstorm: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

case $locking in
normal) modes=(normal) ;;
before) modes=(before) ;;
both) modes=(normal before) ;;
*) echo "run-mdstorm: --locking takes normal, before or both, not '$locking'" >&2; exit 2 ;;
esac
if [[ -n $out ]]; then
	mkdir -p "$out" && out=$(cd "$out" && pwd)
	sets+=(--client_prometheus_port=-1)	# any free port; read back from the log
fi
if ((contended)); then
	sets+=(--client_caps_timeout=0 --client_attr_timeout=0 --client_entry_timeout=0
	       --client_negative_timeout=0 --fuse_cache_readdir=false)
fi

src=$shared/bench/mdstorm.c
[[ -n $shared && -f $src ]] || { echo "run-mdstorm: $top/../shared/bench/mdstorm.c not found" >&2; exit 1; }
mds_bin=$build/mds/loligo-mds fuse_bin=$build/client/fuse/loligo-fuse cli_bin=$build/tools/cli/loligo
if [[ ! -x $mds_bin || ! -x $fuse_bin || ! -x $cli_bin ]]; then
	echo "run-mdstorm: building loligo-mds, loligo-fuse and loligo in $build"
	[[ -f $build/build.ninja ]] || cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C "$build" -j2 loligo-mds loligo-fuse loligo >/dev/null
fi
command -v jq >/dev/null || { echo "run-mdstorm: needs jq (apt-get install jq)" >&2; exit 1; }

work=$(mktemp -d /tmp/loligo-mdstorm.XXXXXX)
chmod 755 "$work"
mnt=$work/mnt conf=$work/loligo.conf asok=$work/client.asok mds_asok=$work/mds.asok
mnt2=$work/mnt2 asok2=$work/client2.asok
mkdir -p "$mnt" "$mnt2" "$work/store" "$work/local"
mds_pid= fuse_pid= fuse2_pid= perf_pid= mds_perf_pid= churn_pid= wl_pid=

# bg_wait CMD...: run CMD in the background and wait for it, so that a
# signal to the script reaches its trap at once (see the top)
bg_wait() {
	"$@" &
	wl_pid=$!
	local st=0
	wait "$wl_pid" || st=$?
	wl_pid=
	return $st
}

unmount() {
	unmount_at "$mnt" "$fuse_pid"
	fuse_pid=
}

cleanup() {
	set +e
	trap '' INT TERM   # a second signal must not cut the cleanup short
	# the workloads first (nothing may keep a mount busy); one stuck in a
	# request of a deadlocked client dies once that client is gone (below)
	[[ -n $wl_pid ]] && kill -TERM "$wl_pid" 2>/dev/null
	[[ -n $churn_pid ]] && kill -TERM "$churn_pid" 2>/dev/null
	[[ -n $perf_pid ]] && kill -INT "$perf_pid" 2>/dev/null && reap "$perf_pid"
	[[ -n $mds_perf_pid ]] && kill -INT "$mds_perf_pid" 2>/dev/null && reap "$mds_perf_pid"
	unmount_at "$mnt2" "$fuse2_pid"
	unmount
	reap "$wl_pid"
	reap "$churn_pid"
	[[ -n $mds_pid ]] && kill -TERM "$mds_pid" 2>/dev/null && reap "$mds_pid"
	if ((keep)); then echo "run-mdstorm: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -Wextra -pthread -o "$work/mdstorm" "$src"
((writer)) && cc -O2 -Wall -Wextra -o "$work/churn" "$here/churn.c"

local_mds_start

mount_fuse() { # LOCKING
	local fargs=(-f -c "$conf" "--client_mds_addr=127.0.0.1:$port" "${sets[@]}")
	[[ $1 == before ]] && fargs+=(--client_mds_locking=before)
	[[ -n $fuse_opts ]] && fargs+=(-o "$fuse_opts")
	"$fuse_bin" "${fargs[@]}" "$mnt" >>"$work/client.out" 2>&1 &
	fuse_pid=$!
	wait_mounted "$mnt" "$asok" "$work/client.out"
}
mount_fuse "${modes[0]}"
if ((writer)); then
	"$fuse_bin" -f -c "$conf" "--client_mds_addr=127.0.0.1:$port" "${sets[@]}" ${fuse_opts:+-o "$fuse_opts"} \
		"--admin_socket=$asok2" "--log_file=$work/client2.log" "$mnt2" >"$work/client2.out" 2>&1 &
	fuse2_pid=$!
	for _ in $(seq 1 150); do grep -q " $mnt2 fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $mnt2 fuse" /proc/mounts || { echo "run-mdstorm: the second loligo-fuse did not mount:" >&2; tail "$work/client2.out" >&2; exit 1; }
fi

asok_cmd() { # PREFIX [SOCKET] -> JSON reply on stdout
	/usr/bin/python3 - "${2:-$asok}" "$1" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(json.dumps({"prefix": sys.argv[2]}).encode() + b"\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
n = struct.unpack(">I", data[:4])[0]
sys.stdout.write(data[4:4 + n].decode())
PY
}

result_line() { grep '^RESULT' "$1" | tail -1; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

echo "== mdstorm: $threads threads, $secs s, $files files, $spr stats per readdir$( ((writer)) && echo ", a writer on a second mount"); $(nproc) CPUs, kernel $(uname -r)"
if ((local)); then
	echo "== local directory ($work/local)"
	bg_wait "$work/mdstorm" "$work/local/storm" "$threads" "$secs" "$files" create 4 "$spr" >"$work/local.out" || true
	cat "$work/local.out"
else
	echo "RESULT skipped" > "$work/local.out"
fi

echo "== loligo ($mnt, loligo-fuse pid $fuse_pid)$( ((contended)) && echo ', contended: every stat and readdir reaches the MDS')"
# The create phase sends the MDS a request per file from $threads threads:
# that is where the client mutex is contended, so its hold times are
# reported too.
asok_cmd "perf reset" >/dev/null
bg_wait "$work/mdstorm" "$mnt/storm" 1 1 "$files" createonly "$threads" >"$work/create-all.out" || true
tail -1 "$work/create-all.out" | tee "$work/create.out"
asok_cmd "perf dump" > "$work/perf-create.json"

# save_metrics FILE: loligo-fuse's Prometheus text (its endpoint's port is in the log)
save_metrics() {
	local url
	url=$(grep -o 'prometheus metrics at http://[^ ]*' "$work/client.log" | tail -1 | sed 's/.* //')
	[[ -n $url ]] || { echo "run-mdstorm: no Prometheus endpoint in $work/client.log" >&2; return 0; }
	/usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
		"$url" > "$1" || echo "run-mdstorm: could not read $url" >&2
}

# CPU time of a process so far, in clock ticks (user + system)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# one storm per locking mode: perf-<mode>.json, mds-<mode>-{0,1}.json, <mode>.out, cpu-<mode>
storm() { # MODE
	local mode=$1 m0 f0
	asok_cmd "perf reset" >/dev/null
	# histograms (revoke latency) cover this storm only; counters are deltas anyway
	asok_cmd "perf reset" "$mds_asok" >/dev/null
	asok_cmd "perf dump" "$mds_asok" > "$work/mds-$mode-0.json"
	m0=$(cpu_ticks "$mds_pid") f0=$(cpu_ticks "$fuse_pid")
	thread_ticks "$fuse_pid" > "$work/threads-$mode-0"
	if [[ -n $perf_out ]]; then
		perf record -g -o "$perf_out.$mode" -p "$fuse_pid" -- sleep "$secs" >/dev/null 2>&1 &
		perf_pid=$!
	fi
	if [[ -n $mds_perf_out ]]; then
		perf record -g -o "$mds_perf_out.$mode" -p "$mds_pid" -- sleep "$secs" >/dev/null 2>&1 &
		mds_perf_pid=$!
	fi
	if ((writer)); then
		"$work/churn" "$mnt2/storm" "$secs" > "$work/churn-$mode.out" 2>&1 &
		churn_pid=$!
	fi
	bg_wait "$work/mdstorm" "$mnt/storm" "$threads" "$secs" "$files" nocreate 1 "$spr" >"$work/$mode.out" || true
	cat "$work/$mode.out"
	echo "$(($(cpu_ticks "$mds_pid") - m0)) $(($(cpu_ticks "$fuse_pid") - f0))" > "$work/cpu-$mode"
	thread_ticks "$fuse_pid" > "$work/threads-$mode-1"
	asok_cmd "perf dump" > "$work/perf-$mode.json"
	asok_cmd "perf dump" "$mds_asok" > "$work/mds-$mode-1.json"
	[[ -n $out ]] && save_metrics "$out/metrics-$mode.txt"
	# (wait returns at once when a signal comes: the trap then stops them)
	if [[ -n $churn_pid ]]; then wait "$churn_pid" || true; churn_pid=; fi
	if [[ -n $perf_pid ]]; then wait "$perf_pid" || true; perf_pid=; echo "perf data in $perf_out.$mode"; fi
	if [[ -n $mds_perf_pid ]]; then wait "$mds_perf_pid" || true; mds_perf_pid=; echo "mds perf data in $mds_perf_out.$mode"; fi
}
first=1
for mode in "${modes[@]}"; do
	if ((!first)); then
		echo "== remounting with client_mds_locking=$mode"
		unmount
		mount_fuse "$mode"
	fi
	first=0
	echo "== storm, locking $mode"
	storm "$mode"
done

echo
for t in local "${modes[@]}"; do
	[[ $t == local && ! -f $work/local.out ]] && continue
	r=$(result_line "$work/$t.out")
	printf 'SUMMARY %-6s stat_ops_s=%s p50_us=%s p99_us=%s readdir_s=%s errors=%s\n' "$t" \
		"$(field "$r" stat_ops_s)" "$(field "$r" stat_p50_us)" "$(field "$r" stat_p99_us)" \
		"$(field "$r" readdir_s)" "$(field "$r" errors)"
done
r=$(result_line "$work/create.out")
echo "SUMMARY create files_s=$(field "$r" files_s) threads=$threads errors=$(field "$r" errors)"
caps_fields() { # MODE -> revokes_s=.. lease_revokes_s=.. revoke_p50_us=.. revoke_p99_us=.. acks_late=.. parked=..
	jq -r --arg secs "$secs" --slurpfile a "$work/mds-$1-0.json" '.mds_caps as $c | ($a[0].mds_caps // {}) as $c0 |
	   "revokes_s=\(($c.revokes - ($c0.revokes // 0)) / ($secs|tonumber) | floor)" +
	   " lease_revokes_s=\(($c.lease_revokes - ($c0.lease_revokes // 0)) / ($secs|tonumber) | floor)" +
	   " revoke_p50_us=\($c.revoke_lat.p50_ns / 1000) revoke_p99_us=\($c.revoke_lat.p99_ns / 1000)" +
	   " acks_late=\($c.acks_late - ($c0.acks_late // 0)) parked=\($c.requests_parked - ($c0.requests_parked // 0))"' \
		"$work/mds-$1-1.json"
}
if ((writer)); then
	for mode in "${modes[@]}"; do
		r=$(result_line "$work/churn-$mode.out")
		echo "SUMMARY writer-$mode ops_s=$(field "$r" ops_s) p50_us=$(field "$r" p50_us) p99_us=$(field "$r" p99_us) errors=$(field "$r" errors)"
		echo "SUMMARY caps-$mode $(caps_fields "$mode")"
	done
fi
for phase in create "${modes[@]}"; do
	f=$work/perf-$phase.json
	jq -r --arg ph "$phase" 'to_entries[] | .key as $g | .value | to_entries[]
	   | select(.key | startswith("hold_")) | select(.value | type == "object")
	   | "SUMMARY hold-\($ph) \($g).\(.key) count=\(.value.count) p50_us=\(.value.p50_ns / 1000)" +
	     " p99_us=\(.value.p99_ns / 1000) max_us=\(.value.max_ns / 1000)"' "$f"
done
for mode in "${modes[@]}"; do
	jq -r --arg m "$mode" 'to_entries[] | .key as $g | .value | to_entries[]
	       | select(.value | type == "number") | select(.value != 0)
	       | "counter \($m) \($g).\(.key)=\(.value)"' "$work/perf-$mode.json" |
		grep -E 'requests_sent|cached|lookup|getattr|readdir' || true
	jq -r --arg m "$mode" --slurpfile a "$work/mds-$mode-0.json" '.mds | to_entries[]
	       | select(.value | type == "number") | select(.value - ($a[0].mds[.key] // 0) != 0)
	       | "mds \($m) \(.key)=\(.value - ($a[0].mds[.key] // 0))"' "$work/mds-$mode-1.json" || true
done
# where loligo-fuse's CPU went, per MDS request: by thread (name), and with
# --set fuse_op_cpu=true in the FUSE handlers by request family (the workers'
# CPU outside them is libfuse's and the kernel's transport)
for mode in "${modes[@]}"; do
	reqs=$(jq -n --slurpfile a "$work/mds-$mode-0.json" --slurpfile b "$work/mds-$mode-1.json" \
		'($b[0].mds.requests // 0) - ($a[0].mds.requests // 0)')
	((reqs > 0)) || continue
	read -r _ ft < "$work/cpu-$mode"
	thread_cpu_lines "$work/threads-$mode-0" "$work/threads-$mode-1" "$ft" "$reqs" "SUMMARY cpu-$mode" |
		sed 's/ us_per=/ us_per_req=/'
	jq -r --arg m "$mode" --argjson n "$reqs" '.fuse // {} | to_entries[]
	       | select(.key | endswith("_cpu")) | select(.value.count > 0)
	       | "SUMMARY handler-cpu-\($m) \(.key | rtrimstr("_cpu")) count=\(.value.count) avg_us=\(.value.avg_ns / 1000)" +
	         " p99_us=\(.value.p99_ns / 1000) us_per_req=\(.value.sum_ns / 1000 / $n * 10 | floor / 10)"' \
		"$work/perf-$mode.json"
done
# the machine-readable lines: the local directory's, then one per mode, last
emit() { # LINE: to stdout, and to --out's result.txt
	echo "$*"
	if [[ -n $out ]]; then echo "$*" >> "$out/result.txt"; fi
}
[[ -n $out ]] && : > "$out/result.txt"
if ((local)); then
	r=$(result_line "$work/local.out")
	emit "RESULT mdstorm-local threads=$threads secs=$secs files=$files stat_ops_s=$(field "$r" stat_ops_s)" \
	     "stat_p99_us=$(field "$r" stat_p99_us) readdir_s=$(field "$r" readdir_s) errors=$(field "$r" errors)"
fi
for mode in "${modes[@]}"; do
	r=$(result_line "$work/$mode.out")
	reqs=$(jq -n --slurpfile a "$work/mds-$mode-0.json" --slurpfile b "$work/mds-$mode-1.json" \
		'($b[0].mds.requests // 0) - ($a[0].mds.requests // 0)')
	holds=$(jq -r '.mds_client | to_entries[] | select(.key | startswith("hold_"))
	       | (.key | ltrimstr("hold_")) as $s
	       | "hold_count_\($s)=\(.value.count) hold_p50_us_\($s)=\(.value.p50_ns / 1000) hold_p99_us_\($s)=\(.value.p99_ns / 1000) hold_max_us_\($s)=\(.value.max_ns / 1000)"' \
		"$work/perf-$mode.json" | tr '\n' ' ')
	read -r mt ft < "$work/cpu-$mode"
	# CPU per MDS request (what load from elsewhere on the machine does not change much)
	cpu=$(awk -v m="$mt" -v f="$ft" -v n="$reqs" -v hz="$hz" 'BEGIN { if (n) printf "mds_cpu_us_per_req=%.1f client_cpu_us_per_req=%.1f", m * 1e6 / hz / n, f * 1e6 / hz / n }')
	wr=
	if ((writer)); then
		c=$(caps_fields "$mode")
		wr=" writer_ops_s=$(field " $(result_line "$work/churn-$mode.out")" ops_s) revokes_s=$(field " $c" revokes_s)"
		wr+=" revoke_p50_us=$(field " $c" revoke_p50_us) revoke_p99_us=$(field " $c" revoke_p99_us)"
	fi
	emit "RESULT mdstorm contended=$contended locking=$mode threads=$threads secs=$secs files=$files" \
	     "stat_ops_s=$(field "$r" stat_ops_s) stat_p99_us=$(field "$r" stat_p99_us)" \
	     "readdir_s=$(field "$r" readdir_s) errors=$(field "$r" errors)" \
	     "mds_requests=$reqs mds_requests_s=$((reqs / secs)) $cpu ${holds% }$wr"
done
