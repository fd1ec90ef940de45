# Recursive statistics and quotas of directories (issue 22.1, 22.2): the
# loligo.dir.* and loligo.quota.* xattrs through a real FUSE mount, exact
# after every kind of change and after a kill -9 of the MDS; EDQUOT for
# file counts (exact) and bytes (within one object size).
loligo_fuse_suite(rstat 600)
