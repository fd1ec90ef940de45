#!/usr/bin/env bash
# run-fio.sh - file data throughput on loligo-fuse mounts of a filesystem on
# the local store, measured with fio.
#
#   tools/bench/run-fio.sh [--build DIR] [--size SIZE] [--secs S] [--mounts N] [--keep]
#
#   --build DIR    build tree with mds/loligo-mds and client/fuse/loligo-fuse
#                  (default: $LOLIGO_BUILD_DIR, else ./build)
#   --size SIZE    file size of the sequential jobs (default 512M)
#   --secs S       run time of the random-write job (default 10)
#   --mounts N     1: one mount (default); 2: also two loligo-fuse mounts of the
#                  same filesystem writing at once (the local store shared by
#                  three processes: the MDS and two clients)
#   --keep         keep the temp dir (logs, fio output)
#
# Jobs (fio, psync, buffered, one file each):
#   seqwrite    1 MiB writes of SIZE, fsync at the end      -> MB/s
#   seqread     the same file read back after a remount      -> MB/s
#                (the kernel's FUSE page cache starts cold; the store's files
#                 are in the host page cache, as after any recent write)
#   randwrite   4 KiB random writes into 64 MiB, each fsync'd, for S s
#                                                            -> IOPS, p50/p99 latency
#   seqwrite x2 (--mounts 2) SIZE/2 per mount on two mounts at once -> MB/s total
# The last lines are a summary: SUMMARY <job> mb_s=... iops=... p50_us=... p99_us=...
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${LOLIGO_BUILD_DIR:-$top/build} size=512M secs=10 mounts=1 keep=0
while (($#)); do
	case $1 in
	--build) build=$2; shift ;;
	--size) size=$2; shift ;;
	--secs) secs=$2; shift ;;
	--mounts) mounts=$2; shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,26p' "$0"; exit 0 ;;
	*) echo "run-fio: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
command -v fio >/dev/null || { echo "run-fio: needs fio (apt-get install fio)" >&2; exit 1; }
command -v jq >/dev/null || { echo "run-fio: needs jq (apt-get install jq)" >&2; exit 1; }
mds_bin=$build/mds/loligo-mds fuse_bin=$build/client/fuse/loligo-fuse
[[ -x $mds_bin && -x $fuse_bin ]] || { echo "run-fio: no loligo-mds/loligo-fuse in $build" >&2; exit 1; }

work=$(mktemp -d /tmp/loligo-fio.XXXXXX)
chmod 755 "$work"
conf=$work/loligo.conf
mkdir -p "$work/mnt1" "$work/mnt2" "$work/store"
mds_pid= fuse_pids=()

umount_all() {
	for m in "$work/mnt1" "$work/mnt2"; do
		if grep -q " $m fuse" /proc/mounts; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
		fi
	done
	for p in "${fuse_pids[@]}"; do
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	fuse_pids=()
}
cleanup() {
	set +e
	umount_all
	[[ -n $mds_pid ]] && kill -TERM "$mds_pid" 2>/dev/null && wait "$mds_pid" 2>/dev/null
	if ((keep)); then echo "run-fio: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# keyrings where the build authenticates clients (builds before the auth work do not)
mds_key= client_key=
if "$mds_bin" --help 2>&1 | grep -q mds_keyring; then
	mds_key="mds_keyring = $work/keyring" client_key="client_keyring = $work/client.keyring"
	"$build/tools/cli/loligo" auth get-or-create client.admin --keyring "$work/keyring" \
		-o "$work/client.keyring" >/dev/null 2>&1
fi
cat > "$conf" <<EOF
[global]
store_backend = local
store_local_path = $work/store
[mds]
mds_addr = 127.0.0.1
log_file = $work/mds.log
$mds_key
[client]
log_file = $work/client.log
$client_key
EOF
"$mds_bin" -c "$conf" --mkfs >"$work/mds.out" 2>&1
"$mds_bin" -c "$conf" --mds_port=0 --port-file "$work/mds.port" >>"$work/mds.out" 2>&1 &
mds_pid=$!
for _ in $(seq 1 150); do [[ -s $work/mds.port ]] && break; sleep 0.1; done
[[ -s $work/mds.port ]] || { echo "run-fio: loligo-mds did not start:" >&2; tail "$work/mds.out" >&2; exit 1; }
port=$(cat "$work/mds.port")

mount_one() { # N
	local m=$work/mnt$1
	"$fuse_bin" -f -c "$conf" "--client_mds_addr=127.0.0.1:$port" "--log_file=$work/client$1.log" "$m" \
		>"$work/client$1.out" 2>&1 &
	fuse_pids+=($!)
	for _ in $(seq 1 150); do grep -q " $m fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $m fuse" /proc/mounts || { echo "run-fio: loligo-fuse did not mount $m:" >&2; tail "$work/client$1.out" >&2; exit 1; }
}

# fio JOB DIR ARGS... -> json in $work/JOB.json
run_fio() {
	local job=$1 dir=$2
	shift 2
	fio --name="$job" --directory="$dir" --ioengine=psync --output-format=json "$@" >"$work/$job.json"
}
summary() { # JOB rw(read|write)
	jq -r --arg job "$1" --arg rw "$2" '
		[.jobs[] | .[$rw]] as $j
		| ($j | map(.bw_bytes) | add) as $bw
		| ($j | map(.iops) | add) as $iops
		| $j[0].clat_ns.percentile as $p
		| "SUMMARY \($job) mb_s=\($bw / 1048576 | floor) iops=\($iops | floor) p50_us=\(($p["50.000000"] // 0) / 1000 | floor) p99_us=\(($p["99.000000"] // 0) / 1000 | floor)"' \
		"$work/$1.json"
}

echo "== fio on loligo-fuse ($build): size $size, $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
mount_one 1
run_fio seqwrite "$work/mnt1" --rw=write --bs=1M --size="$size" --end_fsync=1
umount_all
mount_one 1
run_fio seqread "$work/mnt1" --rw=read --bs=1M --size="$size" --filename=seqwrite.0.0
run_fio randwrite "$work/mnt1" --rw=randwrite --bs=4k --size=64M --fsync=1 --time_based --runtime="$secs"
if ((mounts >= 2)); then
	mount_one 2
	half=$(( $(numfmt --from=iec "$size") / 2 ))
	fio --output-format=json --ioengine=psync --rw=write --bs=1M --size="$half" --end_fsync=1 \
		--name=m1 --directory="$work/mnt1" --name=m2 --directory="$work/mnt2" >"$work/seqwrite2.json"
fi
summary seqwrite write
summary seqread read
summary randwrite write
((mounts >= 2)) && summary seqwrite2 write
exit 0
