# shellcheck shell=bash disable=SC2154  # ceph_scripts: set by the sourcing script
# lib-ceph.sh - a throw-away Ceph cluster (../shared/ceph/start-cluster.sh)
# on a free loopback port, for the scripts that need a real one: sourced by
# tests/integration/store_rados.sh, tests/e2e/fuse_suite_rados.sh and
# tools/bench/lib-targets.sh (not run on its own).
#
# Other engineers and CI run the same scripts on the same machine at the
# same time, so every cluster gets a random port base (never the default
# 40000), checked free and retried on a clash, in a directory of its own.
#
#   ceph_scripts=DIR         ../shared/ceph (set it before calling anything)
#   ceph_check               FAIL line and exit 1 unless the scripts and
#                            Ceph's binaries are there
#   ceph_tmp_cluster PREFIX  tmp=$(mktemp -d /tmp/PREFIX-XXXXXX),
#                            cluster=$tmp/ceph, both wiped on every exit
#                            path: an EXIT trap (INT, TERM, HUP exit 130
#                            through it) and a detached watchdog for a
#                            SIGKILLed caller (ctest's timeout), which
#                            also stops the ceph_fg command.  For
#                            scripts that have nothing else to clean up.
#   ceph_start DIR LOG [VAR=VALUE...]
#                            start-cluster.sh DIR with CEPH_PORT=<free base>
#                            and the VAR=VALUE knobs (CEPH_MDS=1, ...), its
#                            output in LOG; up to 5 attempts, a failed one
#                            said on stderr (with LOG's tail) and wiped.
#                            0 and ceph_port set, or 1: the caller says FAIL.
#   ceph_fg CMD...           CMD in the background, waited for: a signal to
#                            the caller reaches its trap at once (not when
#                            CMD is done), and the EXIT trap of
#                            ceph_tmp_cluster stops CMD before the cluster
#   ceph_stop DIR            stop-cluster.sh DIR --wipe, quietly (and the
#                            OSDs ceph_add_osd added)
#   ceph_add_osd DIR ID      osd.ID beside osd.0, made and started

# a port base P with P and P+1 free on 127.0.0.1; start-cluster.sh also
# uses P+100..P+399 (a clash there fails the start, which is retried)
ceph_free_port() {
	python3 -c 'import random,socket
for _ in range(100):
    p = random.randrange(20000, 30000)
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break'
}

ceph_check() {
	if [[ ! -x $ceph_scripts/start-cluster.sh ]]; then
		echo "FAIL: $ceph_scripts/start-cluster.sh not found: the RADOS suite needs ../shared/ceph next to the checkout" >&2
		exit 1
	fi
	local b
	for b in ceph-mon ceph-osd ceph rados uuidgen python3; do
		command -v "$b" >/dev/null ||
			{ echo "FAIL: $b not installed (apt-get install ceph-mon ceph-osd ceph-common uuid-runtime)" >&2; exit 1; }
	done
}

ceph_stop() {
	local pf
	# OSDs a caller added (ceph_add_osd): stop-cluster.sh stops osd.0 only
	for pf in "$1"/run/osd.*.pid; do
		[[ -s $pf && $pf != */osd.0.pid ]] && kill -KILL "$(cat "$pf")" 2>/dev/null
	done
	"$ceph_scripts/stop-cluster.sh" "$1" --wipe >/dev/null 2>&1 || true
}

# ceph_add_osd DIR ID: one more OSD (same host, same store kind as osd.0)
# in cluster DIR, started; 1 if it could not be made (logs in DIR/log).
# ceph_stop stops it.
ceph_add_osd() {
	local dir=$1 id=$2 uuid
	uuid=$(uuidgen)
	mkdir -p "$dir/osd.$id"
	timeout 60 ceph -c "$dir/ceph.conf" auth get-or-create "osd.$id" mon 'allow profile osd' osd 'allow *' \
		mgr 'allow profile osd' >>"$dir/keyring" &&
		[[ $(timeout 60 ceph -c "$dir/ceph.conf" osd new "$uuid" "$id") == "$id" ]] &&
		ceph-osd -c "$dir/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/osd.$id.mkfs.log" 2>&1 &&
		ceph-osd -c "$dir/ceph.conf" -i "$id" >>"$dir/log/osd.$id.out" 2>&1
}

ceph_start() {
	local dir=$1 log=$2 attempt
	shift 2
	for attempt in 1 2 3 4 5; do
		ceph_port=$(ceph_free_port)
		if [[ -n $ceph_port ]] && env CEPH_PORT="$ceph_port" "$@" "$ceph_scripts/start-cluster.sh" "$dir" >"$log" 2>&1; then
			return 0
		fi
		echo "cluster start attempt $attempt on port ${ceph_port:-(none free)} failed:" >&2
		tail -5 "$log" >&2
		ceph_stop "$dir"
	done
	return 1
}

ceph_fg_pid=
ceph_fg() {
	local st=0
	"$@" &
	ceph_fg_pid=$!
	[[ -d ${tmp:-} ]] && echo "$ceph_fg_pid" >"$tmp/fg.pid"   # for the watchdog
	wait "$ceph_fg_pid" || st=$?
	ceph_fg_pid=
	rm -f "${tmp:-/nonexistent}/fg.pid"
	return $st
}

ceph_tmp_cleanup() {
	trap '' INT TERM HUP   # a second signal must not cut the cleanup short
	if [[ -n $ceph_fg_pid ]]; then
		kill -TERM "$ceph_fg_pid" 2>/dev/null
		wait "$ceph_fg_pid" 2>/dev/null
	fi
	ceph_stop "$cluster"
	rm -rf "$tmp"
}

ceph_tmp_cluster() {
	tmp=$(mktemp -d "/tmp/$1-XXXXXX")
	cluster=$tmp/ceph
	trap ceph_tmp_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	# the caller's pid, the paths baked in: it outlives a SIGKILLed caller,
	# stops what ceph_fg was running (the suite), then wipes
	# shellcheck disable=SC2016  # $(cat ...) is for the watchdog's shell
	setsid bash -c 'while kill -0 '"$$"' 2>/dev/null; do sleep 1; done
		[[ -s "'"$tmp"'/fg.pid" ]] && kill -TERM "$(cat "'"$tmp"'/fg.pid")"
		for pf in "'"$cluster"'"/run/osd.*.pid; do [[ -s $pf ]] && kill -KILL "$(cat "$pf")"; done
		"'"$ceph_scripts"'/stop-cluster.sh" "'"$cluster"'" --wipe; rm -rf "'"$tmp"'"' </dev/null >/dev/null 2>&1 &
}
