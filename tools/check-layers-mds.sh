#!/usr/bin/env bash
# check-layers-mds.sh - mds/'s layers point one way (mds/layers.c's essay).
#
#   tools/check-layers-mds.sh [SOURCE_DIR]      # exit 0: clean; 1: violations, listed
#
# Each file of mds/ belongs to a layer (the table below, lowest first).  A
# file may include the headers of its own layer and of the layers below it,
# never a higher one's: a lower layer that needs a higher one calls it
# through an ops table that layers.c fills.  Also checked: every mds/ file
# is in the table (a new file must be given a layer), and mds.h, the types
# header every layer includes, declares no layer's functions (only the
# object names and the inode blob codec), so that it cannot become the back
# door through which every file sees every other again.
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src/mds"

declare -A layer=(
	# 0: types and encodings every layer uses
	[mds.h]=0 [codec.h]=0 [codec.c]=0 [journal_int.h]=0 [journal_fmt.c]=0
	# 1: connections
	[net.h]=1 [net.c]=1
	# 2: the namespace in memory and its transactions
	[mdcache.h]=2 [mdcache_priv.h]=2 [mdcache.c]=2 [mdcache_codec.c]=2 [mdcache_replay.c]=2
	[rstat.h]=2 [rstat.c]=2
	# 3: the journal: writer, expiry, replay, the offline tools
	[journal.h]=3 [journal_priv.h]=3 [journal.c]=3 [journal_expire.c]=3 [journal_replay.c]=3
	[journal_tool.c]=3
	# 4: journaled tables of their own
	[purge.h]=4 [purge.c]=4 [blocklist.h]=4 [blocklist.c]=4
	# 5: caps and dentry leases, parked requests
	[locker.h]=5 [locker_priv.h]=5 [locker.c]=5 [lease.c]=5 [park.c]=5
	# 6: file locks
	[flock.h]=6 [flock.c]=6
	# 7: sessions and their inode pools
	[session.h]=7 [session.c]=7 [prealloc.h]=7 [prealloc.c]=7
	# 8: the POSIX semantics of the ops
	[server.h]=8 [server.c]=8 [layout.h]=8 [layout.c]=8 [authcaps.h]=8 [authcaps.c]=8
	# 9: the request pipeline
	[request.h]=9 [request.c]=9
	# 10: authentication, admin commands, the MDS map
	[auth.h]=10 [auth.c]=10 [admin.h]=10 [admin.c]=10 [mdsmap.h]=10 [mdsmap.c]=10
	[fsset.h]=10 [fsset.c]=10
	[standby_replay.h]=10 [standby_replay.c]=10
	# 11: the wiring and the program
	[layers.h]=11 [layers.c]=11 [instance.h]=11 [instance.c]=11 [main.c]=11
)
# what mds.h may declare besides types (shared by every layer)
mds_h_functions='oid_dir oid_completed inode_blob_encode inode_blob_decode'

bad=0
fail() { echo "check-layers-mds: $*" >&2; bad=1; }

for f in *.c *.h; do
	[[ -n ${layer[$f]:-} ]] || { fail "mds/$f has no layer: add it to the table in $0"; continue; }
	while IFS=: read -r line h; do
		h=${h#*\"mds/}; h=${h%%\"*}
		if [[ -z ${layer[$h]:-} ]]; then
			fail "mds/$f:$line includes mds/$h, which has no layer"
		elif ((layer[$h] > layer[$f])); then
			fail "mds/$f:$line (layer ${layer[$f]}) includes mds/$h (layer ${layer[$h]}, above it)"
		fi
	done < <(grep -n '^#include "mds/' "$f" | sed 's/^\([0-9]*\):/\1:/' || true)
done

# function declarations in mds.h: "type name(" at the start of a line
while read -r fn; do
	[[ " $mds_h_functions " == *" $fn "* ]] ||
		fail "mds/mds.h declares $fn(): a layer's function belongs in that layer's header"
done < <(grep -oE '^[a-z_][a-z0-9_ ]*[ *]+\**([a-z_][a-z0-9_]*)\(' mds.h | sed -E 's/.*[ *]([a-z_][a-z0-9_]*)\($/\1/' | sort -u)

for f in "${!layer[@]}"; do
	[[ -e $f ]] || fail "mds/$f is in the table but does not exist"
done
if ((bad)); then
	echo "check-layers-mds: mds/ includes a higher layer (see mds/layers.c)" >&2
	exit 1
fi
echo "check-layers-mds: ${#layer[@]} files, every include points down"
