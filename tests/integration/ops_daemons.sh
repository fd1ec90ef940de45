#!/usr/bin/env bash
# ops_daemons.sh BUILD_DIR - operating loligo as an operator would (issue 11.3,
# 11.4, 11.6, 11.7) against real daemons: a loligo-mds and a loligo-fuse
# mount with the NFS gateway in the same process.
#
# Runs in a PID and mount namespace of its own (unshare --pid --mount-proc),
# so the packaged logrotate file's `pkill -HUP -x loligo-mds` reaches our
# daemons only, never another test's, and the FUSE mount is private.
#   signals: SIGHUP reopens the logs of both daemons (the old files are
#     renamed away first, as logrotate does) and stops nothing; on
#     loligo-fuse it also reads nfs_exports again; `log reopen` and
#     `log dump` on the admin socket; SIGTERM still stops cleanly;
#   logrotate: the packaged file (packaging/logrotate.d/loligo, its path
#     pointed at our log dir) rotates the live daemons' logs, they go on
#     serving and write to the new files;
#   further sections are added by the items they test (CLI, statfs,
#     Prometheus).
# Exit: 0 pass, 1 fail (a missing prerequisite too, with what to install).
set -u
BUILD=${1:?usage: ops_daemons.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MDS=$BUILD/mds/loligo-mds
FUSE=$BUILD/client/fuse/loligo-fuse
CLI=$BUILD/tools/cli/loligo
fail() { echo "FAIL: $*"; exit 1; }

if [ "${OPS_DAEMONS_INNER:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || fail "run as root (it makes a PID and mount namespace and a FUSE mount)"
	[ -e /dev/fuse ] || fail "/dev/fuse missing"
	command -v unshare > /dev/null || fail "unshare missing (apt-get install util-linux)"
	command -v logrotate > /dev/null || fail "logrotate missing (apt-get install logrotate)"
	command -v pkill > /dev/null || fail "pkill missing (apt-get install procps)"
	[ -x "$MDS" ] && [ -x "$FUSE" ] && [ -x "$CLI" ] || fail "ninja -C $BUILD loligo-mds loligo-fuse loligo"
	OPS_DAEMONS_INNER=1 exec unshare --pid --mount --fork --mount-proc "$0" "$BUILD"
fi

# ---- inside the namespaces ---------------------------------------------------
T=$(mktemp -d /tmp/loligo-ops.XXXXXX)
PIDS=()
cleanup() {
	grep -q " $T/mnt " /proc/mounts && { fusermount3 -u "$T/mnt" 2>/dev/null || umount -l "$T/mnt"; }
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	if [ "${FAILED:-0}" = 1 ]; then
		for f in "$T"/log/*.log* "$T"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -25 "$f"; }; done
	fi
	rm -rf "$T"
}
trap cleanup EXIT
FAILED=1
mkdir -p "$T/store" "$T/log" "$T/run" "$T/mnt"

cat > "$T/loligo.conf" <<CONF
[global]
store_backend = local
store_local_path = $T/store
nfs4_grace_time = 0
[mds]
mds_addr = 127.0.0.1
log_file = $T/log/\$cluster-\$name.log
admin_socket = $T/run/\$cluster-\$name.asok
mds_keyring = $T/keyring
[client]
log_file = $T/log/\$cluster-\$name.log
admin_socket = $T/run/\$cluster-\$name.\$pid.asok
client_mount_timeout = 10
client_keyring = $T/client.keyring
[nfs]
nfs_exports = id=1,path=/,rw,no_root_squash,insecure
nfs_rpcbind = false
[mds]
mds_prometheus_port = -1
[client]
client_prometheus_port = -1
CONF
MDSLOG=$T/log/loligo-mds.0.log
CLLOG=$T/log/loligo-client.admin.log

"$CLI" auth get-or-create client.admin --keyring "$T/keyring" -o "$T/client.keyring" > "$T/auth.out" 2>&1 ||
	fail "cannot make the keyrings"
"$MDS" -c "$T/loligo.conf" --mkfs > "$T/mkfs.out" 2>&1 || fail "mkfs: $(cat "$T/mkfs.out")"
"$MDS" -c "$T/loligo.conf" --mds_port=0 --port-file "$T/mds.port" > "$T/mds.out" 2>&1 &
MDS_PID=$!
PIDS+=($MDS_PID)
for _ in $(seq 200); do [ -s "$T/mds.port" ] && break; sleep 0.1; done
[ -s "$T/mds.port" ] || fail "loligo-mds did not start"
MDSASOK=$T/run/loligo-mds.0.asok
[ -S "$MDSASOK" ] || fail "no MDS admin socket at $MDSASOK (\$cluster-\$name not expanded?): $(ls "$T/run")"

"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:"$(cat "$T/mds.port")" --nfs 127.0.0.1:0 \
	"$T/mnt" > "$T/fuse.out" 2>&1 &
FUSE_PID=$!
PIDS+=($FUSE_PID)
for _ in $(seq 200); do grep -q " $T/mnt fuse.loligo" /proc/mounts && grep -q "NFS gateway serving" "$CLLOG" 2>/dev/null && break; sleep 0.1; done
grep -q " $T/mnt fuse.loligo" /proc/mounts || fail "loligo-fuse did not mount"
NFSPORT=$(grep "NFS gateway serving" "$CLLOG" | tail -1 | sed -n 's/.*(port \([0-9]*\)).*/\1/p')
[ -n "$NFSPORT" ] || fail "the gateway did not start"
CLASOK=$T/run/loligo-client.admin.$FUSE_PID.asok
[ -S "$CLASOK" ] || fail "no client admin socket at $CLASOK (\$pid not expanded?): $(ls "$T/run")"

# serving: both daemons alive, the mount reads and writes, the gateway accepts
serving() {
	local what=$1 n=$RANDOM
	kill -0 "$MDS_PID" 2>/dev/null || fail "$what: loligo-mds is gone"
	kill -0 "$FUSE_PID" 2>/dev/null || fail "$what: loligo-fuse is gone"
	grep -q " $T/mnt fuse.loligo" /proc/mounts || fail "$what: the mount is gone"
	echo "data $n" > "$T/mnt/f.$n" || fail "$what: cannot write to the mount"
	[ "$(cat "$T/mnt/f.$n")" = "data $n" ] || fail "$what: the mount reads back wrong"
	(exec 3<>/dev/tcp/127.0.0.1/"$NFSPORT") 2>/dev/null || fail "$what: the gateway does not accept"
}
# wait_grep FILE PATTERN [SECS]: poll until FILE has PATTERN
wait_grep() {
	local i
	for i in $(seq $((${3:-20} * 10))); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
serving "at start"
echo "PASS: metavariables: admin sockets $(basename "$MDSASOK"), $(basename "$CLASOK"); logs $(basename "$MDSLOG"), $(basename "$CLLOG")"

# ---- 11.3 signals and logs ---------------------------------------------------
# SIGHUP after a rename (what logrotate does): new files, nothing stops
mv "$MDSLOG" "$MDSLOG.old"
mv "$CLLOG" "$CLLOG.old"
mkdir -p "$T/mnt/sub2"
sed -i "s|^nfs_exports = .*|nfs_exports = id=1,path=/,rw,no_root_squash,insecure;id=2,path=/sub2,pseudo=/two,rw,insecure|" "$T/loligo.conf"
kill -HUP "$MDS_PID" "$FUSE_PID"
wait_grep "$MDSLOG" "log file $MDSLOG reopened" || fail "SIGHUP: loligo-mds did not reopen $MDSLOG"
wait_grep "$CLLOG" "log file $CLLOG reopened" || fail "SIGHUP: loligo-fuse did not reopen $CLLOG"
wait_grep "$CLLOG" "exports reloaded (2 exports" || fail "SIGHUP: loligo-fuse did not reload nfs_exports"
serving "after SIGHUP"
"$CLI" --format json daemon "$CLASOK" exports > "$T/exports.json" || fail "exports after SIGHUP"
python3 -c 'import json,sys; x=json.load(open(sys.argv[1]))["exports"]; assert sorted(e["id"] for e in x)==[1,2], x' \
	"$T/exports.json" || fail "SIGHUP did not put export 2 in force: $(cat "$T/exports.json")"
grep -q "SIGHUP" "$MDSLOG.old" || fail "loligo-mds did not log the SIGHUP in the old file"
echo "PASS: SIGHUP reopens both daemons' logs and reloads the exports; both keep serving"

# several SIGHUPs in a row: still nothing stops
for _ in 1 2 3; do kill -HUP "$MDS_PID" "$FUSE_PID"; done
wait_grep "$CLLOG" "exports reloaded (2 exports" || fail "after SIGHUPs"
for _ in $(seq 20); do [ "$(grep -c 'reopened' "$MDSLOG")" -ge 3 ] && break; sleep 0.1; done
serving "after three SIGHUPs"

# log reopen / log dump on the admin socket
mv "$MDSLOG" "$MDSLOG.asok"
"$CLI" daemon "$MDSASOK" log reopen > "$T/reopen.out" || fail "log reopen: $(cat "$T/reopen.out")"
[ -f "$MDSLOG" ] || fail "log reopen did not make a new $MDSLOG"
"$CLI" daemon "$MDSASOK" config set debug_mds 1/10 > /dev/null || fail "config set debug_mds 1/10 (N/M)"
"$CLI" --format json daemon "$MDSASOK" config get debug_mds > "$T/level.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["debug_mds"] == "1/10"' "$T/level.json" ||
	fail "debug_mds does not read back 1/10: $(cat "$T/level.json")"
"$CLI" daemon "$MDSASOK" config set debug_mds 1/x > "$T/badlevel.out" 2>&1 && fail "debug_mds 1/x accepted"
grep -q "N/M" "$T/badlevel.out" || fail "a bad level does not say which form is accepted: $(cat "$T/badlevel.out")"
ls "$T/mnt" > /dev/null
"$CLI" --format json daemon "$MDSASOK" log dump > "$T/dump.json" || fail "log dump"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["dumped"] > 0' "$T/dump.json" ||
	fail "log dump wrote nothing: $(cat "$T/dump.json")"
grep -q -- "--- begin dump of recent events ---" "$MDSLOG" || fail "no dump in the MDS log"
"$CLI" daemon "$MDSASOK" config set debug_mds 1 > /dev/null
echo "PASS: log reopen, N/M levels and log dump on the admin socket"

# logrotate with the packaged file, against the live daemons
sed "s|/var/log/loligo/\*.log|$T/log/*.log|" "$SRC/packaging/logrotate.d/loligo" > "$T/logrotate.conf"
grep -q "$T/log/" "$T/logrotate.conf" || fail "packaging/logrotate.d/loligo does not name /var/log/loligo/*.log"
sed -i '/^ *su /d' "$T/logrotate.conf"     # our temp dir is not /var/log's owner setup
echo "before rotation" > /dev/null
logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf" > "$T/logrotate.out" 2>&1 ||
	fail "logrotate: $(cat "$T/logrotate.out")"
[ -f "$MDSLOG.1" ] && [ -f "$CLLOG.1" ] || fail "logrotate rotated nothing: $(ls "$T/log")"
wait_grep "$MDSLOG" "reopened" || fail "logrotate: loligo-mds writes no new $MDSLOG"
wait_grep "$CLLOG" "reopened" || fail "logrotate: loligo-fuse writes no new $CLLOG"
serving "after logrotate"
echo "PASS: logrotate's postrotate (packaged file) against the live daemons: new logs, still serving"

# ---- 11.6 statfs and st_blocks ----------------------------------------------------
# df -i: IUsed is the filesystem's inode count (root + what we made), never
# negative, IUse% below 100; df: the data store's filesystem's size
for i in $(seq 10); do : > "$T/mnt/inode.$i"; done
read -r itotal iused ifree ipct <<< "$(df --output=itotal,iused,iavail,ipcent "$T/mnt" | tail -1)"
nfiles=$(find "$T/mnt" | wc -l)
[ "$iused" -ge "$nfiles" ] && [ "$iused" -le $((nfiles + 5)) ] ||
	fail "df -i: IUsed $iused, but the mount holds $nfiles inodes (itotal $itotal ifree $ifree)"
[ "$itotal" = $((iused + ifree)) ] || fail "df -i: $itotal inodes != used $iused + free $ifree"
[ "${ipct%\%}" -lt 100 ] || fail "df -i: IUse% $ipct"
datadir=$T/store.data
read -r size used <<< "$(df -B1 --output=size,used "$T/mnt" | tail -1)"
read -r dsize dused <<< "$(df -B1 --output=size,used "$datadir" | tail -1)"
[ "$size" = "$dsize" ] || fail "df: the mount says size $size, the data store's filesystem $dsize"
[ "$used" -gt 0 ] || fail "df: used 0"
echo "PASS: df -i (IUsed $iused for $nfiles inodes, IUse% $ipct) and df (size = the data store's filesystem)"

# a sparse file: 4 KiB at 0 and 4 KiB at 64 MiB: st_blocks counts 8 KiB, not 64 MiB
dd if=/dev/urandom of="$T/mnt/sparse" bs=4096 count=1 conv=notrunc 2> /dev/null
dd if=/dev/urandom of="$T/mnt/sparse" bs=4096 count=1 seek=16384 conv=notrunc 2> /dev/null
sync "$T/mnt/sparse"
sz=$(stat -c %s "$T/mnt/sparse")
[ "$sz" = $((64 * 1048576 + 4096)) ] || fail "sparse: size $sz"
blk=
for _ in $(seq 50); do
	blk=$(stat -c %b "$T/mnt/sparse")
	[ "$blk" = 16 ] && break
	sleep 0.1     # the kernel's attribute cache (attr timeout) may still hold the size-based value
done
[ "$blk" = 16 ] || fail "sparse: st_blocks $blk for 8 KiB written (size $sz; $((sz / 512)) would be the size)"
du_k=$(du -k "$T/mnt/sparse" | cut -f1)
[ "$du_k" = 8 ] || fail "du says ${du_k}K for 8 KiB written"
echo "PASS: stat of a sparse file: st_blocks $blk (8 KiB written of $sz bytes), du ${du_k}K"

# ---- 11.4 the CLI against the real daemons --------------------------------------------
L() { "$CLI" -c "$T/loligo.conf" "$@"; }
J() { "$CLI" -c "$T/loligo.conf" --format json "$@"; }
# pyjson FILE EXPR: assert a Python expression over the parsed JSON `j`
pyjson() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert $2, j" "$1" 2>&1 || fail "$3: $(head -c 1500 "$1")"; }
VERSION=$("$CLI" --version | awk '{print $2}')
for prog in "$CLI" "$MDS" "$FUSE" "$BUILD/client/fuse/mount.fuse.loligo"; do
	"$prog" --version > "$T/v.out" 2>&1 || fail "$(basename "$prog") --version: exit $?"
	grep -q "$VERSION" "$T/v.out" || fail "$(basename "$prog") --version does not say $VERSION: $(cat "$T/v.out")"
done
"$MDS" --help > "$T/mdshelp.out"
for o in mds_port mds_keyring auth_required store_backend store_local_path rados_conf rados_mon_op_timeout \
	rados_osd_op_timeout rados_id log_file log_max_recent admin_socket debug_mds debug_journal; do
	grep -q -- "--$o=" "$T/mdshelp.out" || fail "loligo-mds --help does not list $o"
done
ls "$T/log" | grep -q "loligo-\.log" && fail "the CLI wrote a log file of its own into the daemons' log dir: $(ls "$T/log")"
echo "PASS: --version on every program; loligo-mds --help lists its options, rados_* too"

J -s --interval 0.3 > "$T/s.json" || fail "loligo -s exit $?"
pyjson "$T/s.json" 'j["health"]["status"] in ("HEALTH_OK","HEALTH_WARN") and j["fs_name"]=="loligo" and j["io"]["requests_per_sec"] >= 0 and j["sessions"]==1' "status json"
pyjson "$T/s.json" 'all(c.startswith("MDS_") for c in j["health"]["checks"])' "status checks"
L -s --interval 0.3 > "$T/s.txt" || fail "loligo -s (plain)"
grep -q "health:  HEALTH_" "$T/s.txt" && grep -q " op/s" "$T/s.txt" && grep -Eq "usage: +[0-9.]+ (B|KiB|MiB|GiB|TiB)" "$T/s.txt" ||
	fail "loligo -s lacks health, op/s or human units: $(cat "$T/s.txt")"
L status --interval 0 > /dev/null || fail "loligo status --interval 0"
J health > "$T/h.json" && pyjson "$T/h.json" '"status" in j and "checks" in j' "health"
J health detail > "$T/hd.json" && pyjson "$T/hd.json" 'all("detail" in c for c in j["checks"].values())' "health detail"
L health detail | head -1 | grep -q "^HEALTH_" || fail "health detail (plain)"
J df > "$T/df.json" || fail "df"
pyjson "$T/df.json" '[p["name"] for p in j["pools"]]==["loligo_metadata","loligo_data"] and j["pools"][1]["stats"]["objects"]>=2 and j["pools"][1]["stats"]["stored"]>=8192 and j["stats"]["total_bytes"]>0' "df pools"
L df > "$T/df.txt"
grep -q -- "--- POOLS ---" "$T/df.txt" && grep -Eq "^loligo_data +[0-9.]+ (B|KiB|MiB|GiB)" "$T/df.txt" || fail "df (plain): $(cat "$T/df.txt")"
J fs dump > "$T/fsd.json" && pyjson "$T/fsd.json" 'j["filesystems"][0]["name"]=="loligo" and j["filesystems"][0]["mds"][0]["name"]=="mds.0" and j["filesystems"][0]["mds"][0]["addr"].endswith(":'"$(cat "$T/mds.port")"'")' "fs dump"
J fs ls > "$T/fsls.json" && pyjson "$T/fsls.json" 'j[0]["name"]=="loligo"' "fs ls"
J fs status > "$T/fss.json" && pyjson "$T/fss.json" 'j["mds"]["state"]=="active" and j["inodes"]>=10' "fs status"
J mds stat > "$T/ms.json" && pyjson "$T/ms.json" 'j["state"]=="active" and j["version"]=="'"$VERSION"'"' "mds stat"
J tell mds.0 session ls > "$T/sl.json" || fail "session ls"
pyjson "$T/sl.json" 'j[0]["hostname"]=="'"$(hostname)"'" and j[0]["mount_point"].startswith("'"$T/mnt"'") and j[0]["version"]=="'"$VERSION"'" and "num_caps" in j[0] and j[0]["pid"]=="'"$FUSE_PID"'"' "session ls: host, mount point, version, caps"
L tell mds.0 session ls | grep -q "MOUNT POINT" || fail "session ls (plain)"
J tell mds.0 ops > "$T/ops.json" && pyjson "$T/ops.json" 'j["num_ops"]==len(j["ops"])' "ops"
# a request that cannot become safe: ops shows it with its age, health warns
L tell mds.0 help > /dev/null || fail "tell mds.0 help"
L daemon mds.0 config set mds_op_complaint_time 0.3 > /dev/null || fail "config set mds_op_complaint_time"
L daemon mds.0 config set mds_journal_hold true > /dev/null || fail "config set mds_journal_hold"
: > "$T/mnt/held-$RANDOM"
for _ in $(seq 50); do J tell mds.0 ops > "$T/ops.json"; python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if any(o["op"]=="create" and o["age_ms"]>300 for o in j["ops"]) else 1)' "$T/ops.json" && break; sleep 0.1; done
pyjson "$T/ops.json" 'any(o["op"]=="create" and o["age_ms"]>300 and o["tid"]>0 and o["session"]==1 for o in j["ops"])' "ops: the held create with its age"
J health detail > "$T/hd.json" && pyjson "$T/hd.json" '"MDS_SLOW_REQUEST" in j["checks"] and j["status"]!="HEALTH_OK"' "health: MDS_SLOW_REQUEST"
L tell mds.0 ops | grep -q "create" || fail "ops (plain)"
L daemon mds.0 config set mds_journal_hold false > /dev/null
for _ in $(seq 50); do J tell mds.0 ops > "$T/ops.json"; python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["num_ops"]==0 else 1)' "$T/ops.json" && break; sleep 0.1; done
pyjson "$T/ops.json" 'j["num_ops"]==0' "ops after the journal writes again"
L daemon mds.0 config set mds_op_complaint_time 30 > /dev/null
J daemon mds.0 perf schema > "$T/ps.json" && pyjson "$T/ps.json" 'j["mds"]["requests"]["type"]=="counter" and j["mds"]["safe_reply_lat"]["type"]=="histogram"' "perf schema"
J daemon client.admin config diff > "$T/cd.json" && pyjson "$T/cd.json" 'j["diff"]["client_keyring"]["source"]=="file" and j["diff"]["client_mds_addr"]["source"]=="cmdline"' "config diff"
J daemon client.admin perf dump > "$T/pd.json" && pyjson "$T/pd.json" 'len(j) > 0' "daemon client.admin perf dump"
J daemon "$CLASOK" version > "$T/ver.json" && pyjson "$T/ver.json" 'j["pid"]=='"$FUSE_PID" "daemon by path"
echo "PASS: status/-s (health, units, op/s), health [detail], df, fs ls/status/dump, mds stat, session ls, ops, perf schema, config diff, daemon by name and path"

# a second client from the same config: its own admin socket; by name it is ambiguous
"$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:"$(cat "$T/mds.port")" --no-mount --nfs 127.0.0.1:0 \
	> "$T/fuse2.out" 2>&1 &
F2=$!
PIDS+=($F2)
for _ in $(seq 100); do [ -S "$T/run/loligo-client.admin.$F2.asok" ] && break; sleep 0.1; done
[ -S "$T/run/loligo-client.admin.$F2.asok" ] || fail "the second client has no socket of its own: $(ls "$T/run")"
L daemon client.admin version > "$T/amb.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "2 daemons are client.admin" "$T/amb.out" && grep -q "$F2.asok" "$T/amb.out" ||
	fail "daemon client.admin with two running: exit $rc: $(cat "$T/amb.out")"
kill -TERM $F2; wait $F2
L daemon client.admin version > /dev/null || fail "daemon client.admin once the second is gone"
echo "PASS: two clients from one config: two sockets (\$pid), and by name the CLI says which"

# exit codes that do not collide
L daemon "$T/run/nothing.asok" help > /dev/null 2>&1; rc=$?; [ $rc = 3 ] || fail "no daemon: exit $rc, want 3"
L tell mds.0 frobnicate > /dev/null 2>&1; rc=$?; [ $rc = 1 ] || fail "unknown command: exit $rc, want 1"
L daemon mds.0 config set fs_name x > /dev/null 2>&1; rc=$?; [ $rc = 1 ] || fail "refused config set: exit $rc, want 1"
L frob > /dev/null 2>&1; rc=$?; [ $rc = 2 ] || fail "bad usage: exit $rc, want 2"
L df extra > /dev/null 2>&1; rc=$?; [ $rc = 2 ] || fail "extra argument: exit $rc, want 2"
printf '[nfs]\nnfs_exports = id=1,path=/,rw,ro\n' > "$T/bad.conf"
"$CLI" -c "$T/bad.conf" config check > /dev/null 2>&1; rc=$?; [ $rc = 1 ] || fail "config check of a bad config: exit $rc, want 1"
echo "PASS: exit codes 1 (failed), 2 (usage), 3 (no daemon)"

# completion: generated from the command table, lists them all, and a daemon's commands
"$CLI" completion > "$T/completion.bash" || fail "loligo completion"
cat > "$T/comp.sh" <<COMP
source "$T/completion.bash"
loligo() { "$CLI" "\$@"; }
comp() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _loligo; echo "\${COMPREPLY[*]}"; }
echo "top: \$(comp loligo '')"
echo "fs: \$(comp loligo fs '')"
echo "health: \$(comp loligo health '')"
echo "daemon: \$(comp loligo -c "$T/loligo.conf" daemon mds.0 '')"
echo "format: \$(comp loligo --format '')"
COMP
bash "$T/comp.sh" > "$T/comp.out" 2>&1 || fail "completion script: $(cat "$T/comp.out")"
for w in status health df fs mds tell daemon auth config completion help; do
	grep "^top:" "$T/comp.out" | grep -qw "$w" || fail "completion does not list '$w': $(cat "$T/comp.out")"
done
grep "^fs:" "$T/comp.out" | grep -qw dump && grep "^fs:" "$T/comp.out" | grep -qw ls || fail "completion of 'fs': $(cat "$T/comp.out")"
grep "^health:" "$T/comp.out" | grep -qw detail || fail "completion of 'health'"
grep "^daemon:" "$T/comp.out" | grep -qw perf && grep "^daemon:" "$T/comp.out" | grep -qw journal ||
	fail "completion of 'daemon mds.0' (the daemon's commands): $(cat "$T/comp.out")"
grep "^format:" "$T/comp.out" | grep -qw json-pretty || fail "completion of --format"
echo "PASS: bash completion lists every command, sub-commands and a daemon's own commands"

# ---- 11.7 the Prometheus endpoints ---------------------------------------------------------
PY3=/usr/bin/python3    # Debian's, with python3-prometheus-client
$PY3 -c 'import prometheus_client.parser' 2>/dev/null || fail "python3-prometheus-client missing (apt-get install python3-prometheus-client)"
# the first start's log lines (the logs were rotated since; the second client wrote there too)
MPORT=$(cat "$MDSLOG"* | grep "loligo-mds\[$MDS_PID\].*prometheus metrics at" | head -1 | sed 's|.*:\([0-9]*\)/metrics$|\1|')
CPORT=$(cat "$CLLOG"* | grep "loligo-fuse\[$FUSE_PID\].*prometheus metrics at" | head -1 | sed 's|.*:\([0-9]*\)/metrics$|\1|')
[ -n "$MPORT" ] && [ -n "$CPORT" ] || fail "no 'prometheus metrics at' line in the logs"
ss -ltnH "sport = :$MPORT" | grep -q "127.0.0.1:$MPORT" || fail "the MDS endpoint is not bound to 127.0.0.1: $(ss -ltnH "sport = :$MPORT")"
ls -la "$T/mnt" > /dev/null; cat "$T/mnt/sparse" > /dev/null
[ -x "$BUILD/tests/nfs_badinput" ] && "$BUILD/tests/nfs_badinput" "$NFSPORT" > "$T/badinput.out" 2>&1
cat > "$T/prom.py" <<'PY'
import sys, urllib.request, urllib.error
from prometheus_client.parser import text_string_to_metric_families
port, who = sys.argv[1], sys.argv[2]
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10)
assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
body = r.read().decode()
open(sys.argv[3], "w").write(body)
fams = {f.name: f for f in text_string_to_metric_families(body)}
def need(name, typ):
    assert name in fams, "no %s in %s" % (name, sorted(fams)[:40])
    assert fams[name].type == typ, "%s is %s, not %s" % (name, fams[name].type, typ)
    return fams[name]
def hist_ok(f, want_count):
    buckets = [(float(s.labels["le"]), s.value) for s in f.samples if s.name.endswith("_bucket")]
    count = [s.value for s in f.samples if s.name.endswith("_count")][0]
    assert buckets[-1][0] == float("inf") and buckets[-1][1] == count, (f.name, buckets[-1], count)
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), (f.name, "buckets not cumulative")
    assert len(buckets) >= 20 and buckets[0][0] < 2e-6, (f.name, len(buckets), buckets[0])
    assert count >= want_count, (f.name, count)
    assert all(s.labels.get("daemon") == who for s in f.samples), (f.name, "daemon label")
if who == "mds.0":
    f = need("loligo_mds_requests", "counter")
    assert f.samples[0].value > 0 and f.samples[0].name == "loligo_mds_requests_total"
    hist_ok(need("loligo_mds_safe_reply_lat_seconds", "histogram"), 1)
    hist_ok(need("loligo_mds_op_lookup_lat_seconds", "histogram"), 0)
else:
    hist_ok(need("loligo_fuse_lookup_lat_seconds", "histogram"), 1)
    hist_ok(need("loligo_fuse_read_lat_seconds", "histogram"), 1)
    need("loligo_fuse_lookup", "counter")
    need("loligo_mds_client_inflight", "gauge")
    hist_ok(need("loligo_nfs4_ops_putrootfh_lat_seconds", "histogram"), 1)
    assert fams["loligo_nfs4_ops_putrootfh"].samples[0].value >= 1
    need("loligo_nfs3_ops_getattr", "counter")
    hist_ok(need("loligo_nfs3_ops_getattr_lat_seconds", "histogram"), 0)
try:
    urllib.request.urlopen("http://127.0.0.1:%s/nothing" % port, timeout=10)
    raise SystemExit("no 404")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
print("%s: %d metric families parsed" % (who, len(fams)))
PY
$PY3 "$T/prom.py" "$MPORT" mds.0 "$T/metrics-mds.txt" > "$T/prom-mds.out" 2>&1 || fail "MDS endpoint: $(cat "$T/prom-mds.out")"
$PY3 "$T/prom.py" "$CPORT" client.admin "$T/metrics-client.txt" > "$T/prom-client.out" 2>&1 ||
	fail "client endpoint: $(tail -3 "$T/prom-client.out")"
# promtool (Debian's prometheus package) lints names and types too, when it is there:
# on PATH, or $PROMTOOL (e.g. from `apt-get download prometheus && dpkg -x prometheus_*.deb DIR`)
PROMTOOL=${PROMTOOL:-$(command -v promtool)}
if [ -n "$PROMTOOL" ] && [ -x "$PROMTOOL" ]; then
	for w in mds client; do
		"$PROMTOOL" check metrics < "$T/metrics-$w.txt" > "$T/promtool-$w.out" 2>&1 ||
			fail "promtool check metrics ($w): $(head -5 "$T/promtool-$w.out")"
	done
	echo "PASS: promtool check metrics: both endpoints clean"
fi
echo "PASS: Prometheus endpoints parse with prometheus_client ($(cat "$T/prom-mds.out"); $(cat "$T/prom-client.out")), on 127.0.0.1"

# bad endpoint settings: a clear line naming the option, exit 1, nothing served
badprom() {	# EXPECTED-TEXT ARGS...: loligo-fuse must refuse to start
	local want=$1; shift
	timeout 60 "$FUSE" -f -c "$T/loligo.conf" --client_mds_addr=127.0.0.1:"$(cat "$T/mds.port")" --no-mount \
		--nfs 127.0.0.1:0 "$@" > "$T/badprom.out" 2>&1; local rc=$?
	[ $rc = 1 ] && grep -q "client_prometheus_port, prometheus_addr): $want" "$T/badprom.out" ||
		fail "loligo-fuse $*: exit $rc, want 1 and '$want': $(cat "$T/badprom.out")"
}
badprom "cannot listen on 127.0.0.1:$CPORT: Address already in use" --client_prometheus_port="$CPORT"
badprom "port 70000: want 0 (off), -1 (any free port) or 1..65535" --client_prometheus_port=70000
badprom "prometheus_addr 'localhost:9' is not an IPv4 or IPv6 address" --client_prometheus_port=-1 \
	--prometheus_addr=localhost:9
grep -A1 -- "--mds_prometheus_port=" "$T/mdshelp.out" | grep -q 'default: "0"' || fail "mds_prometheus_port is not off by default"
"$FUSE" --help-options 2>&1 | grep -A1 -- "--client_prometheus_port=" | grep -q 'default: "0"' ||
	fail "client_prometheus_port is not off by default"
echo "PASS: a busy port, a bad port and a bad address are refused with the option named; both endpoints off by default"

# ---- the end: SIGTERM still stops cleanly --------------------------------------
kill -TERM "$FUSE_PID"
for _ in $(seq 200); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$FUSE_PID" 2>/dev/null && fail "SIGTERM did not stop loligo-fuse"
wait "$FUSE_PID"; rc=$?
[ "$rc" = 0 ] || fail "loligo-fuse exited $rc on SIGTERM"
grep -q " $T/mnt fuse.loligo" /proc/mounts && fail "SIGTERM left the mount"
kill -TERM "$MDS_PID"
for _ in $(seq 200); do kill -0 "$MDS_PID" 2>/dev/null || break; sleep 0.1; done
wait "$MDS_PID"; rc=$?
[ "$rc" = 0 ] || fail "loligo-mds exited $rc on SIGTERM"
grep -q "loligo-mds stopped" "$MDSLOG" || fail "loligo-mds did not log its clean stop"
"$CLI" -c "$T/loligo.conf" --format json -s > "$T/down.json"; rc=$?
[ $rc = 3 ] || fail "loligo -s with the MDS down: exit $rc, want 3"
python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["health"]; assert h["status"]=="HEALTH_ERR" and "MDS_DOWN" in h["checks"]' "$T/down.json" ||
	fail "loligo -s with the MDS down: $(cat "$T/down.json")"
echo "PASS: SIGTERM stops both cleanly (exit 0, unmounted)"
FAILED=0
echo "ALL PASSED"
