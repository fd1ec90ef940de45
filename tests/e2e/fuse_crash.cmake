# Namespace operations from several threads through a real FUSE mount while
# loligo-mds is killed -9 and restarted, then a checker against the model of
# the acknowledged operations, and a fresh mount (issue 13.3: what replay
# must keep, with synchronous and with asynchronous directory operations).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_crash
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_crash.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 560)
  add_dependencies(test_fuse_crash loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_crash PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()

# Several MDS daemons on one filesystem (issue 19): a deposed MDS that must
# write nothing, standbys racing for the rank, a damaged MDS map, mds fail
# and a clean stop.  On the local store, and again on RADOS.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_failover
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_failover.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_store loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_failover loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_failover PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  loligo_fuse_rados_test(failover test_fuse_failover)
endif()
