#!/usr/bin/env bash
# run-client-restart.sh - issue 19.4: how long a crashed client keeps others
# (and itself) waiting.  Per run, on a fresh directory of one filesystem:
# mount A makes directory d and 3 files in it (fsync'd; A holds d's
# directory-create cap), A's loligo-fuse is killed -9, mount B starts a
# create in d (it waits for A's cap), and A is remounted (same config, same
# mount point: the same client name and mount key, client/reclaim.c).
#
#   tools/bench/run-client-restart.sh BUILD_DIR [--runs N] [--keep] [-- EXTRA loligo-fuse ARGS]
#
#   --runs N   runs (default 5), all on one MDS and filesystem
#   --keep     keep the temp dir (logs)
#   EXTRA      e.g. --client_reclaim_dir= to measure without reclaiming (the
#              old behaviour: waits for mds_session_timeout, 60 s)
#
# Prints per run, in ms:
#   serve     from the restarted loligo-fuse's exec to its first served
#             request on the dead client's state (stat d/f0)
#   b_blocked how long B's create in d took (it starts right after the kill)
#   b_after   from the restart's exec to B's create completing
# and then min / median / max of each.  Needs root and /dev/fuse; starts
# and stops its own loligo-mds (mds_session_timeout as configured, 60 s by
# default) and two loligo-fuse mounts in a temp dir; kills only those.
set -euo pipefail

BUILD=${1:?usage: run-client-restart.sh BUILD_DIR [--runs N] [--keep] [-- EXTRA loligo-fuse ARGS]}
shift
runs=5 keep=0 extra=()
while (($#)); do
	case $1 in
	--runs) runs=$2; shift ;;
	--keep) keep=1 ;;
	--) shift; extra=("$@"); break ;;
	*) echo "run-client-restart: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
BUILD=$(cd "$BUILD" && pwd)
MDS=$BUILD/mds/loligo-mds FUSE=$BUILD/client/fuse/loligo-fuse CLI=$BUILD/tools/cli/loligo
for b in "$MDS" "$FUSE" "$CLI"; do [[ -x $b ]] || { echo "run-client-restart: no $b (build it)" >&2; exit 1; }; done
[[ $(id -u) == 0 && -w /dev/fuse ]] || { echo "run-client-restart: needs root and /dev/fuse" >&2; exit 1; }

T=$(mktemp -d /tmp/loligo-restart.XXXXXX)
PIDS=()
A_PID= B_PID=
cleanup() {
	set +e
	for m in "$T/a" "$T/b"; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"; }
	done
	for p in $A_PID $B_PID "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in $A_PID $B_PID "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if ((keep)); then echo "run-client-restart: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }
mkdir -p "$T/store" "$T/a" "$T/b"
cat > "$T/loligo.conf" <<CONF
[global]
store_backend = local
store_local_path = $T/store
[mds]
mds_addr = 127.0.0.1
log_file = $T/mds.log
admin_socket = $T/mds.asok
mds_keyring = $T/keyring
[client]
log_file = $T/client.log
client_keyring = $T/client.keyring
CONF
"$CLI" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" > /dev/null 2>&1 ||
	{ echo "run-client-restart: cannot make the keyrings" >&2; exit 1; }
"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || { echo "mkfs failed: $(cat "$T/mkfs.out")" >&2; exit 1; }
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do [[ -s $T/mds.port ]] && break; sleep 0.1; done
[[ -s $T/mds.port ]] || { echo "run-client-restart: the MDS did not start" >&2; exit 1; }
MDSADDR=127.0.0.1:$(cat "$T/mds.port")

# mount TAG DIR: loligo-fuse -f in the background; sets the pid in ${TAG}_PID
mount_one() {
	local tag=$1 dir=$2
	"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr="$MDSADDR" --admin_socket="$T/$tag.asok" \
		"${extra[@]}" "$dir" >> "$T/$tag.out" 2>&1 &
	printf -v "${tag^^}_PID" %s $!
}
wait_mounted() {
	for _ in $(seq 600); do mountpoint -q "$1" && return 0; sleep 0.05; done
	echo "run-client-restart: $1 did not mount: $(tail -3 "$T/${1##*/}.out")" >&2
	exit 1
}
parked() {
	"$CLI" --format json daemon "$T/mds.asok" perf dump 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["mds_caps"]["requests_parked"])'
}

mount_one a "$T/a"
mount_one b "$T/b"
wait_mounted "$T/a"
wait_mounted "$T/b"
echo "# run-client-restart: $runs runs, loligo-fuse ${extra[*]:-(defaults)}, $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo ?)"
printf "%-4s %10s %10s %10s\n" run serve b_blocked b_after
S=() BB=() BA=()
for i in $(seq "$runs"); do
	d=d$i
	mkdir "$T/a/$d"
	for f in 0 1 2; do
		head -c 65536 /dev/urandom > "$T/a/$d/f$f"
		sync "$T/a/$d/f$f"
	done
	kill -9 "$A_PID"
	wait "$A_PID" 2>/dev/null || true
	A_PID=
	fusermount3 -u "$T/a" 2>/dev/null || fusermount3 -uz "$T/a"
	p0=$(parked)
	# B creates in d: it waits for the dead client's directory-create cap
	( s=$(now_ns); touch "$T/b/$d/from-b"; e=$(now_ns); echo "$s $e" > "$T/b.$i" ) &
	bjob=$!
	for _ in $(seq 2000); do
		(( $(parked) > p0 )) && break
		[[ -s $T/b.$i ]] && break
		sleep 0.005
	done
	t0=$(now_ns)
	mount_one a "$T/a"
	until mountpoint -q "$T/a" && stat "$T/a/$d/f0" > /dev/null 2>&1; do
		kill -0 "$A_PID" 2>/dev/null || { echo "run-client-restart: the restart failed: $(tail -3 "$T/a.out")" >&2; exit 1; }
		sleep 0.002
	done
	t1=$(now_ns)
	wait "$bjob"
	read -r bs be < "$T/b.$i"
	s=$(( (t1 - t0) / 1000000 )) bb=$(( (be - bs) / 1000000 )) ba=$(( (be - t0) / 1000000 ))
	((ba < 0)) && ba=0
	S+=("$s") BB+=("$bb") BA+=("$ba")
	printf "%-4s %10s %10s %10s\n" "$i" "$s" "$bb" "$ba"
done
stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%s/%s/%s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
echo "# min/median/max ms: serve $(stats "${S[@]}")  b_blocked $(stats "${BB[@]}")  b_after $(stats "${BA[@]}")"
grep -c "evicted: reclaimed by its restarted client" "$T/mds.log" | sed 's/^/# sessions reclaimed (mds log): /' || true
