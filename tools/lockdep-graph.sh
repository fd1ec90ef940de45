#!/usr/bin/env bash
# lockdep-graph.sh - the lock orders the code really takes, from lockdep's
# dumps (common/lockdep.c): run anything built with LOLIGO_LOCKDEP (the
# default for the suite's builds) with LOLIGO_LOCKDEP_DUMP=DIR, then
#
#   tools/lockdep-graph.sh DIR            # "A -> B" per line, one per order seen
#   tools/lockdep-graph.sh --dot DIR      # the same as a graphviz digraph
#
# e.g. LOLIGO_LOCKDEP_DUMP=/tmp/ld ctest -L e2e; tools/lockdep-graph.sh /tmp/ld
# A class is a lock's init site ("&in->lock (client/inode.c:NNN)"), or the
# name of a flag lock (LOCKDEP_CLASS).  docs/LOCKING.md is the order the code
# is meant to keep; this is what it did keep, and lockdep aborted any run
# that closed a cycle.
set -euo pipefail
dot=0
if [[ ${1:-} == --dot ]]; then dot=1; shift; fi
dir=${1:?usage: $0 [--dot] DIR}
compgen -G "$dir/lockdep.*" > /dev/null || { echo "lockdep-graph: no lockdep.* dumps in $dir" >&2; exit 1; }
edges=$(cut -f1 "$dir"/lockdep.* | sort -u)
if ((dot)); then
	echo 'digraph locks {'
	echo '  rankdir=TB; node [shape=box, fontsize=10];'
	while IFS= read -r e; do
		a=${e%% -> *} b=${e#* -> }
		printf '  "%s" -> "%s";\n' "$a" "$b"
	done <<< "$edges"
	echo '}'
else
	echo "$edges"
fi
