# Runs inside the qemu guest (NFSv4.1): the gateway is killed with SIGKILL
# and started again while we hold an fcntl lock over NFS and write; the
# lock must be reclaimed (no write fails), never granted to another
# lock-owner meanwhile, and the writes resume (lockwriter.c says how fast).
fail() { echo "GUEST FAIL: $*"; exit 1; }
D=@DIR@
mkdir $D || fail "mkdir $D"
cd $D || fail "cd $D"
$KCLIENT_FILES/lockwriter data ../kill9-request-@DIR@ || fail "lockwriter"
echo GUEST OK
