# A FUSE mount whose client_mds_addr lists several MDS addresses follows the
# MDS by itself: a dead first address, a new MDS on another port after
# SIGTERM and kill -9 (session resumed, UNSAFE creates replayed), and the
# probe of a silent (SIGSTOPped) MDS (issue 19.3).
loligo_fuse_suite(follow 600)
