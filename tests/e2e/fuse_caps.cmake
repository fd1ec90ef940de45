# Two clients through the kernel: what one changes, the other's FUSE mount
# shows at once (caps and leases revoked, kernel caches invalidated).  On
# the local store the second client is a library client in the test (names
# and attributes); with a real Ceph cluster (fuse_caps_rados, started by
# fuse_suite_rados.sh caps) two loligo-fuse mounts share data too.
loligo_fuse_suite(caps 600 RADOS LIBS loligo_client loligo_common LABELS caps)
