# Runs inside the qemu guest (busybox sh), cwd = the NFS mount.
# $1-less: the driver substitutes @DIR@ (a directory per NFS version).
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
mkdir $D || fail "mkdir $D"
cd $D || fail "cd $D"
# create, write, read, rename, remove
echo hello > a.txt || fail create
[ "$(cat a.txt)" = hello ] || fail "read a.txt"
mkdir sub || fail mkdir
mv a.txt sub/b.txt || fail rename
[ "$(cat sub/b.txt)" = hello ] || fail "read after rename"
[ ! -e a.txt ] || fail "a.txt still there after rename"
rm sub/b.txt || fail remove
rmdir sub || fail rmdir
[ ! -e sub ] || fail "sub still there"
# overwrite with less (O_TRUNC), append, truncate
echo 1234567890 > tr.txt && echo ab > tr.txt || fail "overwrite"
[ "$(cat tr.txt)" = ab ] || fail "O_TRUNC left '$(cat tr.txt)'"
echo cd >> tr.txt || fail append
[ "$(cat tr.txt | tr '\n' ' ')" = "ab cd " ] || fail "append gave '$(cat tr.txt)'"
truncate -s 1 tr.txt 2>/dev/null || dd if=/dev/null of=tr.txt bs=1 seek=1 2>/dev/null
[ "$(stat -c %s tr.txt)" = 1 ] || fail "truncate: size $(stat -c %s tr.txt)"
rm tr.txt
echo "basic ok"
# 32 MiB written and read back (page cache dropped in between)
dd if=/dev/urandom of=/tmp/big bs=1M count=32 2>/dev/null
S1=$(md5sum /tmp/big | cut -d' ' -f1)
cp /tmp/big big.bin || fail "cp 32 MiB"
sync
echo 3 > /proc/sys/vm/drop_caches
S2=$(md5sum big.bin | cut -d' ' -f1)
[ "$S1" = "$S2" ] || fail "32 MiB md5 $S1 != $S2"
rm big.bin /tmp/big || fail "rm big"
echo "32MiB ok"
# statfs (df -i) and a sparse file's st_blocks (issue 11.6): the inode count
# is used = total - free, between 1 and what a test makes; 8 KiB written at
# 0 and 64 MiB count 16 blocks (a little more for the kernel's rounding),
# not the 64 MiB of the size
set -- $(stat -f -c "%c %d" .)
[ "$1" -gt 0 ] && [ "$2" -le "$1" ] || fail "statfs: $1 inodes in all, $2 free"
iused=$(( $1 - $2 ))
[ $iused -ge 1 ] && [ $iused -lt 100000 ] || fail "statfs: $iused inodes used ($1 - $2)"
dd if=/dev/zero of=sparse bs=4096 count=1 2>/dev/null || fail "sparse: write at 0"
dd if=/dev/zero of=sparse bs=4096 count=1 seek=16384 conv=notrunc 2>/dev/null || fail "sparse: write at 64M"
sync
echo 3 > /proc/sys/vm/drop_caches
[ "$(stat -c %s sparse)" = 67112960 ] || fail "sparse: size $(stat -c %s sparse)"
b=$(stat -c %b sparse)
[ "$b" -ge 16 ] && [ "$b" -le 64 ] || fail "sparse: st_blocks $b for 8 KiB written"
rm sparse
echo "statfs ok ($iused inodes used), sparse st_blocks $b"
# a directory with 2000 entries
mkdir many || fail "mkdir many"
i=0
while [ $i -lt 2000 ]; do : > many/f$i || fail "create many/f$i"; i=$((i+1)); done
echo 3 > /proc/sys/vm/drop_caches
n=$(ls many | wc -l)
[ "$n" = 2000 ] || fail "ls many: $n entries"
[ -e many/f1999 ] || fail "many/f1999"
echo "2000 entries ok"
# symlinks and hard links
echo data > t.txt
ln -s t.txt s.lnk || fail symlink
[ "$(readlink s.lnk)" = t.txt ] || fail readlink
[ "$(cat s.lnk)" = data ] || fail "read through the symlink"
ln t.txt h.txt || fail "hard link"
[ "$(stat -c %h t.txt)" = 2 ] || fail "nlink is $(stat -c %h t.txt)"
[ "$(stat -c %i t.txt)" = "$(stat -c %i h.txt)" ] || fail "hard link inode"
echo "links ok"
# chmod and chown
chmod 640 t.txt || fail chmod
[ "$(stat -c %a t.txt)" = 640 ] || fail "mode is $(stat -c %a t.txt)"
chown 1234:5678 t.txt || fail chown
[ "$(stat -c %u:%g t.txt)" = 1234:5678 ] || fail "owner is $(stat -c %u:%g t.txt)"
echo "chmod/chown ok"
# the caller's credentials: uid 1000 may not write root's file, may create
# in a world-writable directory (and owns what it creates)
echo root-only > perm.txt && chmod 644 perm.txt
mkdir pub && chmod 777 pub
R=$KCLIENT_FILES/runas
if $R 1000 1000 /bin/sh -c 'echo x >> perm.txt' 2>/dev/null; then fail "uid 1000 wrote root's 0644 file"; fi
[ "$(cat perm.txt)" = root-only ] || fail "perm.txt changed"
$R 1000 1000 /bin/sh -c 'echo mine > pub/u.txt' || fail "uid 1000 cannot create in a 0777 directory"
[ "$(stat -c %u:%g pub/u.txt)" = 1000:1000 ] || fail "pub/u.txt owned by $(stat -c %u:%g pub/u.txt)"
if $R 1000 1000 /bin/sh -c 'rm perm.txt' 2>/dev/null; then fail "uid 1000 removed root's file"; fi
rm -r perm.txt pub || fail "cleanup perm"
echo "credentials ok"
# fcntl and flock locks between two processes
$KCLIENT_FILES/locktest lockf || fail "locks"
echo "locks ok"
# one open-owner and one lock-owner on 16 files at once (the driver checks
# that 4.1 never waited on an owner seqid)
mkdir storm || fail "mkdir storm"
$KCLIENT_FILES/opstorm storm 16 8 || fail "opstorm"
rm -r storm || fail "rm storm"
echo "opstorm ok"
# the other way round: a file written through the FUSE mount
[ "$(cat ../from-fuse.txt)" = "written through fuse" ] || fail "from-fuse.txt: $(cat ../from-fuse.txt)"
echo "written through nfs" > from-nfs.txt || fail "from-nfs.txt"
echo GUEST OK
