# Runs inside the qemu guest against a gateway exporting /pdata at
# /srv/data (rw) and /pro at /srv/ro (ro): the pseudo root leads to both.
fail() { echo "GUEST FAIL: $*"; exit 1; }
[ "$(ls)" = srv ] || fail "pseudo root lists '$(ls)'"
[ "$(ls srv | tr '\n' ' ')" = "data ro " ] || fail "srv lists '$(ls srv)'"
[ "$(cat srv/ro/x)" = "read only" ] || fail "srv/ro/x"
[ "$(cat srv/data/y)" = "read write" ] || fail "srv/data/y"
echo new > srv/data/z || fail "write to the rw export"
[ "$(cat srv/data/z)" = new ] || fail "read back srv/data/z"
if echo bad > srv/ro/w 2>/dev/null; then fail "a write to the ro export succeeded"; fi
if (: > newfile) 2>/dev/null; then fail "created a file in the pseudo fs"; fi
cd srv/data || fail "cd srv/data"
[ "$(ls .. | tr '\n' ' ')" = "data ro " ] || fail "lookupp out of an export: '$(ls ..)'"
echo GUEST OK
