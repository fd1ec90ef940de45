# shellcheck shell=bash disable=SC2034  # mds_pid and port are for the sourcing script
# lib-local.sh - one loligo-mds on a local store and the FUSE mounts of the
# single-build benchmarks (run-fusefloor.sh, run-mdstorm.sh); sourced, not
# run.  The sourcing script sets bench (its name, for messages), work (its
# temp dir), conf, asok (the client's admin socket), mds_asok and mds_bin,
# cli_bin; it gets mds_pid and port from local_mds_start.  thread_ticks
# and thread_cpu_lines split a daemon's CPU by thread name.
# LOLIGO_BENCH_MDS_ARGS (environment): more loligo-mds options, split on
# spaces, e.g. "--mds_journal_max_delay=0" to compare with the default.

# CPU time of each live thread of a process so far, summed by thread name:
# "name<TAB>ticks" lines (the FUSE workers keep the process's name,
# loligo-fuse; the others are named).  A thread may exit between the glob
# and the read: skipped (what exited threads spent is the process's total
# less the live threads', reported as "(exited)" below).
thread_ticks() {
	local t
	for t in /proc/"$1"/task/*; do
		# comm may hold spaces: the fields after its closing parenthesis
		sed -E 's/^[0-9]+ \((.*)\) (.*)$/\1\t\2/' "$t/stat" 2>/dev/null || true
	done | awk -F'\t' '{ split($2, f, " "); t[$1] += f[12] + f[13] } END { for (n in t) printf "%s\t%d\n", n, t[n] }'
}

# thread_cpu_lines BEFORE AFTER TOTAL_TICKS N PREFIX: from two thread_ticks
# files, "PREFIX thread=NAME us_per=X" lines, largest first: each thread
# name's CPU per unit (N units: requests, files), and "(exited)" for what
# threads that exited spent (TOTAL_TICKS, the process's, less the live
# threads').
thread_cpu_lines() {
	awk -F'\t' -v n="$4" -v hz="$(getconf CLK_TCK)" -v p="$5" -v total="$3" 'NR == FNR { t0[$1] = $2; next }
		{ d = $2 - t0[$1]; live += d; if (d > 0) printf "%d\t%s thread=%s us_per=%.1f\n", d, p, $1, d * 1e6 / hz / n }
		END { d = total - live; if (d > 0) printf "%d\t%s thread=(exited) us_per=%.1f\n", d, p, d * 1e6 / hz / n }' \
		"$1" "$2" | sort -rn | cut -f2-
}

# reap PID: wait up to 10 s for child PID to exit, then SIGKILL it; reaped.
reap() {
	local p=$1
	[[ -n $p ]] || return 0
	for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}

# unmount_at MNT PID: unmount MNT if it is a FUSE mount, then reap PID.
unmount_at() {
	if grep -q " $1 fuse" /proc/mounts; then
		fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1" 2>/dev/null || true
	fi
	reap "$2"
}

# local_mds_start: write $conf (a local store in $work/store, the MDS's and
# the client's logs, sockets and keyrings in $work), mkfs, start loligo-mds
# on a free port; sets mds_pid and port, or exits 1 saying why.
local_mds_start() {
	mkdir -p "$work/store"
	cat >"$conf" <<EOF
[global]
store_backend = local
store_local_path = $work/store
[mds]
mds_addr = 127.0.0.1
log_file = $work/mds.log
admin_socket = $mds_asok
mds_keyring = $work/keyring
[client]
log_file = $work/client.log
admin_socket = $asok
client_keyring = $work/client.keyring
EOF
	"$cli_bin" auth get-or-create client.admin --keyring "$work/keyring" -o "$work/client.keyring" 2>/dev/null
	"$mds_bin" -c "$conf" --mkfs >"$work/mds.out" 2>&1 ||
		{ echo "$bench: loligo-mds --mkfs failed:" >&2; tail "$work/mds.out" >&2; exit 1; }
	# shellcheck disable=SC2086 # LOLIGO_BENCH_MDS_ARGS: extra options, split on spaces
	"$mds_bin" -c "$conf" --mds_port=0 --port-file "$work/mds.port" ${LOLIGO_BENCH_MDS_ARGS:-} >>"$work/mds.out" 2>&1 &
	mds_pid=$!
	for _ in $(seq 1 150); do [[ -s $work/mds.port ]] && break; sleep 0.1; done
	[[ -s $work/mds.port ]] || { echo "$bench: loligo-mds did not start:" >&2; tail "$work/mds.out" >&2; exit 1; }
	port=$(cat "$work/mds.port")
}

# wait_mounted MNT [ASOK] [OUT]: MNT is a FUSE mount within 15 s (else exit 1,
# with the tail of OUT), and ASOK, if given, a socket within 5 s more.
wait_mounted() {
	for _ in $(seq 1 150); do grep -q " $1 fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $1 fuse" /proc/mounts || { echo "$bench: $1 did not mount:" >&2; [[ -z ${3:-} ]] || tail "$3" >&2; exit 1; }
	[[ -z ${2:-} ]] && return 0
	for _ in $(seq 1 50); do [[ -S $2 ]] && break; sleep 0.1; done
}
