# Runs inside the qemu guest (NFSv4.1 and 4.0; v3 mounts nolock): fcntl
# locks over NFS conflict with a process on the host's second loligo-fuse
# mount of the same filesystem, both ways (the MDS arbitrates between that
# mount's session and the gateway's).  Handshake as in guest-coherency.sh:
# "LOCKS ..." lines on our stdout (streamed to the driver), the driver's
# answers written through FUSE into req (polled by content: close-to-open).
# A refused-or-granted that is wrong is reported and the rest still runs
# (both directions show), the exit status says it.
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
L=$KCLIENT_FILES/locktest
cd $D || fail "cd $D (the driver makes it through FUSE)"
wait_req() {  # wait_req WORD
	i=0
	while [ "$(cat req 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the driver never wrote '$1' into req (it has '$(cat req 2>/dev/null)')"
		sleep 0.1
	done
}
# (a) a host process holds bytes 0-4 of lk through FUSE: our F_SETLK is refused
wait_req host-holds
bad=0
if $L busy lk 0 5; then
	echo "LOCKS A BUSY"
else
	echo "GUEST FAIL: F_SETLK over NFS granted while a FUSE mount holds the range"
	echo "LOCKS A GRANTED"
	bad=1
fi
wait_req host-unlocked
$L get lk 0 5 || fail "F_SETLK over NFS refused after the FUSE holder unlocked"
echo "LOCKS GUEST GOT IT"
# (b) we hold it: the host's F_SETLK through FUSE is refused until we unlock
rm -f /tmp/lk.ready /tmp/lk.release
$L hold lk 0 5 /tmp/lk.ready /tmp/lk.release > /tmp/hold.out 2>&1 &
H=$!
i=0
until [ -e /tmp/lk.ready ]; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "locktest hold did not get the lock in 30 s: $(cat /tmp/hold.out)"
	kill -0 $H 2>/dev/null || fail "locktest hold: $(cat /tmp/hold.out)"
	sleep 0.1
done
echo "LOCKS GUEST HOLDS"
wait_req guest-release
touch /tmp/lk.release
wait $H || fail "locktest hold: $(cat /tmp/hold.out)"
echo "LOCKS GUEST UNLOCKED"
# stay mounted (our NFS state alive) until the host has taken the lock
wait_req done
[ $bad = 0 ] || exit 1
echo GUEST OK
