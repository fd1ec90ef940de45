# Runs inside the qemu guest (vers=4.1, the pseudo root) against exports
# with knfsd's defaults: /srv/def says only id, path and insecure (so: ro,
# root_squash); /srv/sq adds rw (root_squash still).  Root's write to the
# first is denied; on the second root is the anonymous user: its new file
# is owned by 65534, and root's own 0644 file is not writable by it.
fail() { echo "GUEST FAIL: $*"; exit 1; }
[ "$(cat srv/def/seen)" = "from fuse" ] || fail "srv/def/seen: '$(cat srv/def/seen)'"
if echo x > srv/def/new 2>/dev/null; then fail "root wrote to the default (read-only) export"; fi
if echo x >> srv/def/seen 2>/dev/null; then fail "root appended to a file on the default export"; fi
[ ! -e srv/def/new ] || fail "srv/def/new exists"
echo mine > srv/sq/new || fail "root cannot create in the 1777 directory of a rw, root-squashed export"
[ "$(stat -c %u:%g srv/sq/new)" = 65534:65534 ] || fail "root's new file is owned by $(stat -c %u:%g srv/sq/new)"
if echo x >> srv/sq/rootfile 2>/dev/null; then fail "squashed root wrote root's 0644 file"; fi
[ "$(cat srv/sq/rootfile)" = "root's" ] || fail "srv/sq/rootfile changed"
echo GUEST OK
