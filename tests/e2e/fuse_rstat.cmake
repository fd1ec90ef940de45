# Recursive statistics and quotas of directories (issue 22.1, 22.2): the
# loligo.dir.* and loligo.quota.* xattrs through a real FUSE mount, exact
# after every kind of change and after a kill -9 of the MDS; EDQUOT for
# file counts (exact) and bytes (within one object size).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_rstat
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_rstat.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_rstat loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_rstat PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
