# A FUSE mount whose client_mds_addr lists several MDS addresses follows the
# MDS by itself: a dead first address, a new MDS on another port after
# SIGTERM and kill -9 (session resumed, UNSAFE creates replayed), and the
# probe of a silent (SIGSTOPped) MDS (issue 19.3).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_follow
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_follow.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_follow loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_follow PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
