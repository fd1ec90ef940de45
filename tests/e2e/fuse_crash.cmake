# Namespace operations from several threads through a real FUSE mount while
# loligo-mds is killed -9 and restarted, then a checker against the model of
# the acknowledged operations, and a fresh mount (issue 13.3: what replay
# must keep, with synchronous and with asynchronous directory operations).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(crash 560)
  # its failover case with a standby-replay standby (issue 19): every
  # acknowledged operation exactly once, and each takeover applied only
  # what the follower had not
  add_test(NAME test_fuse_crash_sreplay COMMAND test_fuse_crash)
  set_tests_properties(test_fuse_crash_sreplay PROPERTIES
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 400 LABELS "e2e;fuse"
    ENVIRONMENT "CK_RUN_CASE=failover;CK_DEFAULT_TIMEOUT=400;LOLIGO_FAILOVERS=4;LOLIGO_FAILOVER_THREADS=8;LOLIGO_FAILOVER_STANDBY_REPLAY=1;LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR};LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()

# Several MDS daemons on one filesystem (issue 19): a deposed MDS that must
# write nothing, standbys racing for the rank, a damaged MDS map, mds fail
# and a clean stop.  On the local store, and again on RADOS.
loligo_fuse_suite(failover 600 RADOS LIBS loligo_store loligo_proto loligo_common)
