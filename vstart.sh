#!/usr/bin/env bash
# vstart.sh - build loligo and bring up a local filesystem, as Ceph's
# vstart.sh does: a loligo-mds on the embedded local object store, a
# loligo-fuse mount, and the embedded NFS gateway in the same client process.
#
#   ./vstart.sh [--dir DIR] [--mnt MNT] [--nfs-port PORT] [--mds-port PORT]
#               [--standby N] [--standby-replay N] [--no-nfs] [--no-build]
#   ./vstart.sh --stop [--dir DIR] [--mnt MNT]
#
#   --dir DIR        state: config, store, logs, admin sockets (default ./vstart)
#   --mnt MNT        FUSE mount point (default ./mnt)
#   --nfs-port PORT  NFS gateway port on 127.0.0.1 (default 2049)
#   --mds-port PORT  MDS port on 127.0.0.1 (default 6800)
#   --standby N      N more loligo-mds daemons (mds.a, mds.b, ...) on the
#                    next ports, standing by for rank 0; the mount is given
#                    every MDS address and follows the rank by itself
#   --standby-replay N  as --standby N, but the standbys follow rank 0's
#                    journal as it is written (mds_standby_replay): a
#                    takeover replays only what they have not applied yet
#   --no-nfs         do not start the NFS gateway
#   --no-build       do not (re)build; use ./build as it is
#   --stop           unmount and stop everything started with this --dir
#
# Running it again starts only what is not running: a crashed MDS comes
# back, a live mount is left alone (never mounted twice).
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD

dir=$top/vstart mnt=$top/mnt nfs_port=2049 mds_port=6800 nfs=1 build=1 stop=0 standby=0 sreplay=false
while (($#)); do
	case $1 in
	--dir) dir=$2; shift ;;
	--mnt) mnt=$2; shift ;;
	--nfs-port) nfs_port=$2; shift ;;
	--mds-port) mds_port=$2; shift ;;
	--standby) standby=$2; shift
		[[ $standby =~ ^[0-9]$ ]] || { echo "vstart: --standby takes 0 to 9" >&2; exit 2; } ;;
	--standby-replay) standby=$2 sreplay=true; shift
		[[ $standby =~ ^[0-9]$ ]] || { echo "vstart: --standby-replay takes 0 to 9" >&2; exit 2; } ;;
	--no-nfs) nfs=0 ;;
	--no-build) build=0 ;;
	--stop) stop=1 ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "vstart: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Never touch the mount point through the filesystem before we know it is
# not a (possibly hung: its MDS died) loligo mount: resolve it as a string.
mnt=$(realpath -m -s "$mnt")
grep -q " $mnt fuse" /proc/mounts || mkdir -p "$mnt"
out=$dir/out
conf=$dir/loligo.conf
bin=$top/build

# alive PIDFILE: the process runs and is ours (not a zombie waiting to be
# reaped after a crash, not an unrelated process that reused the pid)
alive() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(cat "$1")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
	[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] || return 1
	tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'loligo-'
}
mounted() { grep -q " $mnt fuse" /proc/mounts; }

stop_pid() { # pidfile name
	local pf=$1 name=$2 pid i
	alive "$pf" || { rm -f "$pf"; return 0; }
	pid=$(cat "$pf")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "vstart: $name (pid $pid) did not stop in 10 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pf"
	echo "stopped $name"
}

if ((stop)); then
	if mounted; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
		echo "unmounted $mnt"
	fi
	stop_pid "$out/client.pid" loligo-fuse
	# standbys first: stopping the active first would hand them the rank
	for pf in "$out"/mds.?.pid; do
		[[ -e $pf ]] || continue
		n=${pf##*/mds.}; n=${n%.pid}
		stop_pid "$pf" "loligo-mds (mds.$n)"
	done
	stop_pid "$out/mds.pid" loligo-mds
	exit 0
fi

if ((build)); then
	./install-deps.sh --runtime
	cmake -S "$top" -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C "$bin" loligo-mds loligo-fuse loligo >/dev/null
fi
for b in mds/loligo-mds client/fuse/loligo-fuse tools/cli/loligo; do
	[[ -x $bin/$b ]] || { echo "vstart: $bin/$b missing: build first (drop --no-build)" >&2; exit 1; }
done

mkdir -p "$out" "$dir/store"
if [[ ! -f $conf ]]; then
	cat > "$conf" <<CONF
# written by vstart.sh; edit freely, it is not rewritten while it exists
[global]
fs_name = loligo
store_backend = local
store_local_path = $dir/store

[mds]
mds_addr = 127.0.0.1
mds_port = $mds_port
# \$cluster-\$name: Ceph's metavariables (loligo-mds.0.asok): 'loligo daemon mds.0 ...' finds it
admin_socket = $out/\$cluster-\$name.asok
log_file = $out/\$cluster-\$name.log
# auth_required is on (the default): clients prove the key of their name
mds_keyring = $dir/keyring

[client]
# every MDS daemon of the filesystem, comma-separated, any order: the client
# connects to them in turn and follows the active one (issue 19), e.g.
#   client_mds_addr = 127.0.0.1:$mds_port,127.0.0.1:$((mds_port + 1))
client_mds_addr = 127.0.0.1:$mds_port
# \$pid: two mounts from this config do not collide: 'loligo daemon client.admin ...' finds the one running
admin_socket = $out/\$cluster-\$name.\$pid.asok
log_file = $out/\$cluster-\$name.log
client_keyring = $dir/client.admin.keyring

[nfs]
# the embedded gateway in loligo-fuse: the whole filesystem at pseudo path /
nfs_exports = id=1,path=/,pseudo=/,clients=127.0.0.1,rw,no_root_squash,insecure
CONF
fi

# ---- keys: the MDS keyring and client.admin's (loligo auth get-or-create
# client.NAME -o FILE adds more, the MDS running or not)
if [[ ! -f $dir/client.admin.keyring ]]; then
	"$bin/tools/cli/loligo" auth get-or-create client.admin --keyring "$dir/keyring" \
		-o "$dir/client.admin.keyring" 2>/dev/null
fi

# ---- MDS
if alive "$out/mds.pid"; then
	echo "loligo-mds already running (pid $(cat "$out/mds.pid"))"
else
	if [[ ! -f $dir/store/.mkfs-done ]]; then
		"$bin/mds/loligo-mds" -c "$conf" --mkfs
		touch "$dir/store/.mkfs-done"
	fi
	rm -f "$out/mds.port"
	"$bin/mds/loligo-mds" -c "$conf" --port-file "$out/mds.port" >>"$out/mds.stderr" 2>&1 &
	echo $! > "$out/mds.pid"
	# the new daemon's own log line: another daemon holds rank 0 (vstart --standby)
	standing_by() { grep "mdsmap: mds.0 (gid" "$out/loligo-mds.0.log" 2>/dev/null | tail -1 | grep -q "is a standby"; }
	for i in $(seq 1 100); do [[ -s $out/mds.port ]] && break; alive "$out/mds.pid" || break; standing_by && break; sleep 0.1; done
	if ! [[ -s $out/mds.port ]] && alive "$out/mds.pid" && standing_by; then
		echo "started loligo-mds (pid $(cat "$out/mds.pid")) as a standby: another daemon holds rank 0"
	elif ! [[ -s $out/mds.port ]]; then
		echo "vstart: loligo-mds did not start; see $out/mds.stderr and $out/loligo-mds.0.log:" >&2
		tail -5 "$out/mds.stderr" >&2 || true
		exit 1
	else
		echo "started loligo-mds (pid $(cat "$out/mds.pid")) on 127.0.0.1:$(cat "$out/mds.port")"
	fi
fi

# ---- standby MDS daemons (--standby N): mds.a, mds.b, ... on the next ports
names=(a b c d e f g h i)
addrs=127.0.0.1:$mds_port
for ((k = 0; k < standby; k++)); do
	n=${names[k]} p=$((mds_port + 1 + k))
	addrs+=,127.0.0.1:$p
	if alive "$out/mds.$n.pid"; then
		echo "loligo-mds mds.$n already running (pid $(cat "$out/mds.$n.pid"))"
		continue
	fi
	"$bin/mds/loligo-mds" -c "$conf" --mds_name="$n" --mds_port="$p" \
		--mds_standby_count_wanted="$standby" --mds_standby_replay="$sreplay" >>"$out/mds.$n.stderr" 2>&1 &
	echo $! > "$out/mds.$n.pid"
	echo "started loligo-mds mds.$n (pid $!) on 127.0.0.1:$p, standing by for rank 0$([[ $sreplay == true ]] && echo " (standby-replay: following its journal)")"
done
((standby)) && "$bin/tools/cli/loligo" -c "$conf" daemon mds.0 config set mds_standby_count_wanted "$standby" \
	>/dev/null 2>&1 || true

# ---- FUSE mount (+ NFS gateway in the same process)
if mounted && alive "$out/client.pid"; then
	echo "loligo-fuse already mounted at $mnt (pid $(cat "$out/client.pid"))"
else
	if mounted; then   # a dead client leaves "transport endpoint is not connected"
		fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
	args=(-c "$conf" -f)
	((standby)) && args+=(--client_mds_addr="$addrs")
	((nfs)) && args+=(--nfs "127.0.0.1:$nfs_port")
	"$bin/client/fuse/loligo-fuse" "${args[@]}" "$mnt" >>"$out/client.stderr" 2>&1 &
	echo $! > "$out/client.pid"
	for i in $(seq 1 150); do mounted && break; alive "$out/client.pid" || break; sleep 0.1; done
	if ! mounted; then
		echo "vstart: loligo-fuse did not mount $mnt; see $out/client.stderr and $out/loligo-client.admin.log:" >&2
		tail -5 "$out/client.stderr" >&2 || true
		exit 1
	fi
	echo "started loligo-fuse (pid $(cat "$out/client.pid")), mounted at $mnt"
fi

cat <<MSG

loligo is up.
  mount point     $mnt
  config          $conf
  status          $bin/tools/cli/loligo -c $conf -s
  MDS admin sock  $out/loligo-mds.0.asok   ($bin/tools/cli/loligo -c $conf daemon mds.0 help)
  MDS map         $bin/tools/cli/loligo -c $conf fs status   (ranks, standbys, epoch)
  client asok     $out/loligo-client.admin.$(cat "$out/client.pid" 2>/dev/null).asok   ($bin/tools/cli/loligo -c $conf daemon client.admin perf dump)
  logs            $out/
MSG
((nfs)) && cat <<MSG
  NFS export      127.0.0.1:$nfs_port:/
                  mount -t nfs4 -o vers=4.1,port=$nfs_port,proto=tcp 127.0.0.1:/ /some/dir
MSG
cat <<MSG
  stop            $0 --stop --dir $dir --mnt $mnt
MSG
