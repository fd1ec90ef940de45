# Runs inside the qemu guest: the gateway is restarted under our feet while
# a file is held open; everything afterwards must just work.
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
mkdir $D || fail "mkdir $D"
cd $D || fail "cd $D"
echo before > a.txt || fail "write before"
exec 3>>held.txt || fail "open held.txt"
echo one >&3 || fail "write one"
: > ../restart-request-@DIR@ || fail "request a restart"
# the driver restarts the gateway now (our calls meanwhile wait: hard mount)
# and then writes "restart-done" into the request file through FUSE.  Poll
# the file's content, not a new name: open() revalidates the file
# (close-to-open), while a lookup of a missing name may be answered from a
# cached negative dentry.
i=0
while [ "$(cat ../restart-request-@DIR@ 2>/dev/null)" != restart-done ]; do
	i=$((i + 1))
	[ $i -le 60 ] || fail "the gateway was not restarted within 60 s"
	sleep 1
done
echo after > b.txt || fail "create after the restart"
[ "$(cat a.txt)" = before ] || fail "read after the restart"
echo two >&3 || fail "write to the file held open across the restart"
exec 3>&-
[ "$(cat held.txt | tr '\n' ' ')" = "one two " ] || fail "held.txt is '$(cat held.txt)'"
mv b.txt c.txt || fail "rename after the restart"
rm a.txt c.txt held.txt || fail "remove after the restart"
echo GUEST OK
