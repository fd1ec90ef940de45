# Runs inside the qemu guest: changes made through the gateway must reach the
# FUSE mount of the same loligo-fuse process at once (the driver has the
# kernel cache them first), and FUSE's changes reach us on re-open.
# Handshake: "COH READY"/"COH DONE" on our stdout (streamed to the driver),
# and the driver's answers written through FUSE into req (polled by content:
# open() revalidates, close-to-open).
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
cd $D || fail "cd $D (the driver makes it through FUSE)"
wait_req() {  # wait_req WORD
	i=0
	while [ "$(cat req 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the driver never wrote '$1' into req"
		sleep 0.1
	done
}
[ "$(cat back.txt)" = "fuse v1" ] || fail "back.txt: '$(cat back.txt)'"
# a file we keep open; the driver removes it through FUSE after COH DONE
# (heldopen then uses it through its descriptor once req says go2).  NFSv4
# only: v3 has no opens, nothing tells the gateway the file is in use.
HELD=
if [ "@VERS@" != 3 ]; then
	$KCLIENT_FILES/heldopen held.txt req go2 > /tmp/held.out 2>&1 &
	HELD=$!
	i=0
	until grep -q "HELD READY" /tmp/held.out 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "heldopen did not start: $(cat /tmp/held.out)"
		kill -0 $HELD 2>/dev/null || fail "heldopen: $(cat /tmp/held.out)"
		sleep 0.1
	done
fi
echo "COH READY"
wait_req go
# the driver has read, stat'ed and listed everything through FUSE by now
echo "new-new-new" > same.txt || fail "overwrite same.txt"           # same size
echo "grown: a longer content than before" > grow.txt || fail "overwrite grow.txt"
echo "x" > shrink.txt || fail "overwrite shrink.txt"
echo "appended" >> app.txt || fail "append app.txt"
chmod 600 same.txt || fail chmod
: > new.txt || fail "create new.txt"
rm gone.txt || fail "rm gone.txt"
mv ren-a.txt ren-b.txt || fail "rename"
mkdir newdir || fail mkdir
ln -s same.txt new.lnk || fail symlink
ln app.txt app-link.txt || fail "hard link"
sync
echo "COH DONE"
# the other way: FUSE overwrote back.txt (we have read it before)
wait_req go2
[ "$(cat back.txt)" = "fuse v2, longer than v1" ] || fail "back.txt after a FUSE overwrite: '$(cat back.txt)'"
[ "$(stat -c %s back.txt)" = 24 ] || fail "back.txt size $(stat -c %s back.txt)"
# the file removed while we held it open: written, synced, read, closed
[ -z "$HELD" ] || wait $HELD || fail "a file removed while open: $(cat /tmp/held.out)"
echo GUEST OK
