#!/bin/sh
# check-layers.sh [CLIENT_DIR] - check that client/ (the client library) keeps
# its layers: a file includes only headers of its own layer or below, calls
# only functions of its own layer or below, and a layer's private header
# declares only functions of its layer.  client/types_int.h describes the
# layers; the table below is the one place that says which file is where.
# Exit 0 when the tree keeps them, 1 with one line per violation otherwise.
# Run by ctest (tests/unit/layers.cmake); plain sh and awk, no compiler.
#
# What a "call" is: a name followed by "(" outside comments and strings,
# where the name is a function defined (not static) in another client/*.c.
# A call up through an ops vector (c->cache_ops.flush_data(...)) names a
# member, not a function, and is how a lower layer reaches a higher one.
set -eu

dir=${1:-$(dirname "$0")/../client}
cd "$dir"

# file layer; ranks: session 0, cache 1, data 2, ns 3, facade 4.
# types: the shared structures, included by every layer, declaring no
# function.  public: client.h, the API of the whole library, whose
# functions belong to the layer of the file that defines them.
layers='
mds_client.c session
mds_client_session.c session
mds_client_conn.c session
mds_client_auth.c session
intr.c session
opwait.c session
mds_client.h session
mds_client_int.h session
intr.h session
optrack.h session
types_int.h types
client.h public
inode.c cache
dentry.c cache
caps.c cache
blocks.c cache
request.c cache
optrack.c cache
frontend.c cache
cache_int.h cache
objio.c data
writeback.c data
file.c data
purge.c data
data_int.h data
namei.c ns
asyncdir.c ns
asyncunlink.c ns
readdir.c ns
rd_pack.h ns
flock.c ns
seek.c ns
ns_int.h ns
client.c facade
reclaim.c facade
client_int.h facade
'

files=$(ls ./*.c ./*.h | sed 's|^\./||')

printf '%s\n' "$layers" | awk -v files="$files" '
function rank(l) {
	if (l == "session") return 0
	if (l == "types" || l == "cache") return 1
	if (l == "data") return 2
	if (l == "ns") return 3
	if (l == "facade") return 4
	return 5
}
# the text of a file without comments, strings and character constants
function code_of(f,    line, out, i, ch, nx, incom, instr, s) {
	out = ""; incom = 0
	while ((getline line < f) > 0) {
		s = ""; instr = ""
		for (i = 1; i <= length(line); i++) {
			ch = substr(line, i, 1); nx = substr(line, i + 1, 1)
			if (incom) {
				if (ch == "*" && nx == "/") { incom = 0; i++ }
				continue
			}
			if (instr != "") {
				if (ch == "\\") { i++; continue }
				if (ch == instr) instr = ""
				continue
			}
			if (ch == "/" && nx == "*") { incom = 1; i++; s = s " "; continue }
			if (ch == "/" && nx == "/") break
			if (ch == "\"" || ch == "\047") { instr = ch; s = s "\"\""; continue }
			s = s ch
		}
		out = out s "\n"
	}
	close(f)
	return out
}
function fail(msg) { print "check-layers: " msg; bad++ }
NF == 2 { layer[$1] = $2 }
END {
	n = split(files, fl, "\n")
	for (i = 1; i <= n; i++) {
		f = fl[i]
		if (!(f in layer)) {
			fail(f ": not in the table of layers (tools/check-layers.sh): say where it belongs")
			continue
		}
		code[f] = code_of(f)
	}
	# the functions each .c defines (col 0, not static) and every name it defines
	for (i = 1; i <= n; i++) {
		f = fl[i]
		if (!(f in code) || f !~ /\.c$/)
			continue
		m = split(code[f], ln, "\n")
		for (j = 1; j <= m; j++) {
			if (ln[j] !~ /^[A-Za-z_][A-Za-z0-9_ \t*]*[A-Za-z_][A-Za-z0-9_]*\(/ || ln[j] ~ /;[ \t]*$/ || ln[j] ~ /^(typedef|extern|return)/)
				continue
			name = ln[j]; sub(/\(.*/, "", name); sub(/.*[ \t*]/, "", name)
			own[f, name] = 1
			if (ln[j] !~ /^static/)
				def[name] = f
		}
	}
	for (i = 1; i <= n; i++) {
		f = fl[i]
		if (!(f in code))
			continue
		r = rank(layer[f])
		# includes (read from the raw file: code_of blanks strings)
		while ((getline line < f) > 0) {
			if (line !~ /^#[ \t]*include[ \t]*"client\/[^\/"]*"/)
				continue
			h = line; sub(/^#[ \t]*include[ \t]*"client\//, "", h); sub(/".*/, "", h)
			if (!(h in layer))
				fail(f ": includes client/" h ", which is in no layer")
			else if (layer[h] != "public" && rank(layer[h]) > r)
				fail(f " (" layer[f] ") includes client/" h " (" layer[h] "), a layer above it")
		}
		close(f)
		# functions declared in a layer header belong to that layer
		if (f ~ /\.h$/ && layer[f] != "public") {
			m = split(code[f], ln, "\n")
			for (j = 1; j <= m; j++) {
				s = ln[j]
				if (s !~ /^[A-Za-z_].*[A-Za-z_][A-Za-z0-9_]*\(/ || s ~ /^(#|typedef|struct [A-Za-z_0-9]+ \{)/)
					continue
				name = s; sub(/\(.*/, "", name); sub(/.*[ \t*]/, "", name)
				if (layer[f] == "types" && s !~ /^static inline/)
					fail(f " (types) declares " name "(): a layer header says what its layer offers, this one only types")
				else if ((name in def) && layer[def[name]] != layer[f])
					fail(f " (" layer[f] ") declares " name "(), defined in " def[name] " (" layer[def[name]] ")")
			}
		}
		# calls
		if (f !~ /\.c$/)
			continue
		s = code[f]
		while (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			name = substr(s, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
			pre = RSTART > 1 ? substr(s, RSTART - 1, 1) : ""
			s = substr(s, RSTART + RLENGTH)
			if (pre == "." || pre == ">" || (f, name) in own || !(name in def))
				continue
			g = def[name]
			if (rank(layer[g]) > r && !seen[f, name]++)
				fail(f " (" layer[f] ") calls " name "(), defined in " g " (" layer[g] "), a layer above it")
		}
	}
	if (bad) {
		print "check-layers: " bad " violation(s) of the layers in client/types_int.h"
		exit 1
	}
}
'
