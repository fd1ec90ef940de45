#!/usr/bin/env bash
# run-mdstorm.sh - the metadata storm of ../shared/bench/mdstorm.c on a loligo
# FUSE mount and on a plain local directory, in the same run, plus the client
# mutex hold times from the loligo-fuse admin socket (`perf dump`).
#
#   tools/bench/run-mdstorm.sh [--build DIR] [--threads N] [--secs S] [--files N]
#                              [--stats-per-readdir N] [--perf-record FILE]
#                              [--fuse-opt OPT,...] [--set OPTION=VALUE]... [--keep]
#
#   --build DIR        build tree with mds/loligo-mds and client/fuse/loligo-fuse
#                      (default: $LOLIGO_BUILD_DIR, else ./build); built here if missing
#   --threads/--secs/--files   storm shape (default 32, 20, 5000)
#   --stats-per-readdir N      stat()s per full readdir and thread (default 100)
#   --perf-record FILE record loligo-fuse with `perf record -g` during the loligo storm
#   --fuse-opt OPTS    extra -o options for loligo-fuse
#   --set OPT=VAL      a config override for loligo-fuse (--OPT=VAL), repeatable
#   --keep             keep the temp dir (logs, perf dumps) instead of removing it
#   --no-local         skip the local-directory run (quick experiments only)
#
# Everything runs on a temp dir with an ephemeral MDS port; the trap unmounts
# and stops both daemons whatever happens.  The last lines are a summary:
#   SUMMARY local  stat_ops_s=... p50_us=... p99_us=... readdir_s=...
#   SUMMARY loligo stat_ops_s=... p50_us=... p99_us=... readdir_s=...
#   SUMMARY create files_s=...
#   SUMMARY hold-create|hold-storm <section> count=... p50_us=... p99_us=... max_us=...
# (hold-create: client mutex hold times while $THREADS threads create the
# files, one MDS request each; hold-storm: during the stat/readdir storm)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
shared=$(cd "$top/../shared" 2>/dev/null && pwd || true)

build=${LOLIGO_BUILD_DIR:-$top/build} threads=32 secs=20 files=5000 spr=100
perf_out= fuse_opts= keep=0 sets=() local=1
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--threads) threads=$2; shift ;;
	--secs) secs=$2; shift ;;
	--files) files=$2; shift ;;
	--stats-per-readdir) spr=$2; shift ;;
	--perf-record) perf_out=$2; shift ;;
	--fuse-opt) fuse_opts=$2; shift ;;
	--set) sets+=("--$2"); shift ;;
	--keep) keep=1 ;;
	--no-local) local=0 ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "run-mdstorm: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

src=$shared/bench/mdstorm.c
[[ -n $shared && -f $src ]] || { echo "run-mdstorm: $top/../shared/bench/mdstorm.c not found" >&2; exit 1; }
mds_bin=$build/mds/loligo-mds fuse_bin=$build/client/fuse/loligo-fuse
if [[ ! -x $mds_bin || ! -x $fuse_bin ]]; then
	echo "run-mdstorm: building loligo-mds and loligo-fuse in $build"
	[[ -f $build/build.ninja ]] || cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C "$build" -j2 loligo-mds loligo-fuse >/dev/null
fi
command -v jq >/dev/null || { echo "run-mdstorm: needs jq (apt-get install jq)" >&2; exit 1; }

work=$(mktemp -d /tmp/loligo-mdstorm.XXXXXX)
chmod 755 "$work"
mnt=$work/mnt conf=$work/loligo.conf asok=$work/client.asok
mkdir -p "$mnt" "$work/store" "$work/local"
mds_pid= fuse_pid= perf_pid=

cleanup() {
	set +e
	[[ -n $perf_pid ]] && kill -INT "$perf_pid" 2>/dev/null && wait "$perf_pid" 2>/dev/null
	if grep -q " $mnt fuse" /proc/mounts; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null
	fi
	if [[ -n $fuse_pid ]]; then
		for _ in $(seq 1 100); do kill -0 "$fuse_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$fuse_pid" 2>/dev/null
	fi
	[[ -n $mds_pid ]] && kill -TERM "$mds_pid" 2>/dev/null && wait "$mds_pid" 2>/dev/null
	if ((keep)); then echo "run-mdstorm: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -Wextra -pthread -o "$work/mdstorm" "$src"

cat > "$conf" <<EOF
[global]
store_backend = local
store_local_path = $work/store
[mds]
mds_addr = 127.0.0.1
log_file = $work/mds.log
[client]
log_file = $work/client.log
admin_socket = $asok
EOF

"$mds_bin" -c "$conf" --mkfs >"$work/mds.out" 2>&1
"$mds_bin" -c "$conf" --mds_port=0 --port-file "$work/mds.port" >>"$work/mds.out" 2>&1 &
mds_pid=$!
for _ in $(seq 1 150); do [[ -s $work/mds.port ]] && break; sleep 0.1; done
[[ -s $work/mds.port ]] || { echo "run-mdstorm: loligo-mds did not start:" >&2; tail "$work/mds.out" >&2; exit 1; }
port=$(cat "$work/mds.port")

fargs=(-f -c "$conf" "--client_mds_addr=127.0.0.1:$port" "${sets[@]}")
[[ -n $fuse_opts ]] && fargs+=(-o "$fuse_opts")
"$fuse_bin" "${fargs[@]}" "$mnt" >"$work/client.out" 2>&1 &
fuse_pid=$!
for _ in $(seq 1 150); do grep -q " $mnt fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $mnt fuse" /proc/mounts || { echo "run-mdstorm: loligo-fuse did not mount:" >&2; tail "$work/client.out" >&2; exit 1; }

asok_cmd() { # PREFIX -> JSON reply on stdout
	/usr/bin/python3 - "$asok" "$1" <<'PY'
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

echo "== mdstorm: $threads threads, $secs s, $files files, $spr stats per readdir; $(nproc) CPUs, kernel $(uname -r)"
if ((local)); then
	echo "== local directory ($work/local)"
	"$work/mdstorm" "$work/local/storm" "$threads" "$secs" "$files" create 4 "$spr" | tee "$work/local.out" || true
else
	echo "RESULT skipped" > "$work/local.out"
fi

echo "== loligo ($mnt, loligo-fuse pid $fuse_pid)"
# The create phase sends the MDS a request per file from $threads threads:
# that is where the client mutex is contended, so its hold times are
# reported too.
asok_cmd "perf reset" >/dev/null
"$work/mdstorm" "$mnt/storm" 1 1 "$files" createonly "$threads" | tail -1 | tee "$work/create.out" || true
asok_cmd "perf dump" > "$work/perf-create.json"
asok_cmd "perf reset" >/dev/null
if [[ -n $perf_out ]]; then
	perf record -g -o "$perf_out" -p "$fuse_pid" -- sleep "$secs" >/dev/null 2>&1 &
	perf_pid=$!
fi
"$work/mdstorm" "$mnt/storm" "$threads" "$secs" "$files" nocreate 1 "$spr" | tee "$work/loligo.out" || true
asok_cmd "perf dump" > "$work/perf.json"
if [[ -n $perf_pid ]]; then wait "$perf_pid" || true; perf_pid=; echo "perf data in $perf_out"; fi

echo
for t in local loligo; do
	r=$(result_line "$work/$t.out")
	printf 'SUMMARY %-6s stat_ops_s=%s p50_us=%s p99_us=%s readdir_s=%s errors=%s\n' "$t" \
		"$(field "$r" stat_ops_s)" "$(field "$r" stat_p50_us)" "$(field "$r" stat_p99_us)" \
		"$(field "$r" readdir_s)" "$(field "$r" errors)"
done
r=$(result_line "$work/create.out")
echo "SUMMARY create files_s=$(field "$r" files_s) threads=$threads errors=$(field "$r" errors)"
for phase in create storm; do
	f=$work/perf.json
	[[ $phase == create ]] && f=$work/perf-create.json
	jq -r --arg ph "$phase" 'to_entries[] | .key as $g | .value | to_entries[]
	   | select(.key | startswith("hold_")) | select(.value | type == "object")
	   | "SUMMARY hold-\($ph) \($g).\(.key) count=\(.value.count) p50_us=\(.value.p50_ns / 1000)" +
	     " p99_us=\(.value.p99_ns / 1000) max_us=\(.value.max_ns / 1000)"' "$f"
done
jq -r 'to_entries[] | .key as $g | .value | to_entries[]
       | select(.value | type == "number") | select(.value != 0)
       | "counter \($g).\(.key)=\(.value)"' "$work/perf.json" | grep -E 'requests_sent|cached|lookup|getattr|readdir' || true
