# Runs inside the qemu guest (any version): the export is rw; the driver
# reloads it read-only while we stay mounted, and then our next change is
# refused (reads still work); after a reload back to rw it works again.
# Handshake: "RELOAD ASK RO"/"RELOAD ASK RW" on our stdout (streamed to the
# driver), its answers written through FUSE into $D/req (polled by content).
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
mkdir $D || fail "mkdir $D"
echo before > $D/a.txt || fail "write before the reload"
wait_req() {  # wait_req WORD
	i=0
	while [ "$(cat $D/req 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the driver never wrote '$1' into $D/req"
		sleep 0.1
	done
}
echo "RELOAD ASK RO"
wait_req ro-done
if echo x > $D/b.txt 2>/dev/null; then fail "created a file after the export was reloaded read-only"; fi
if mkdir $D/sub 2>/dev/null; then fail "mkdir after the export was reloaded read-only"; fi
[ "$(cat $D/a.txt)" = before ] || fail "read after the ro reload"
echo "RELOAD ASK RW"
wait_req rw-done
echo after > $D/c.txt || fail "write after the reload back to rw"
rm -r $D || fail "cleanup"
echo GUEST OK
