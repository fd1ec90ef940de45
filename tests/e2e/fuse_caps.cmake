# Two clients through the kernel: what one changes, the other's FUSE mount
# shows at once (caps and leases revoked, kernel caches invalidated).  On
# the local store the second client is a library client in the test (names
# and attributes); with a real Ceph cluster (fuse_caps_rados, started by
# fuse_suite_rados.sh caps) two loligo-fuse mounts share data too.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_caps
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_caps.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_client loligo_common
    LABELS e2e fuse caps
    TIMEOUT 600)
  add_dependencies(test_fuse_caps loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_caps PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  if(LOLIGO_RADOS)
    add_test(NAME fuse_caps_rados
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuse_suite_rados.sh caps $<TARGET_FILE:test_fuse_caps>)
    set_tests_properties(fuse_caps_rados PROPERTIES
      TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      LABELS "e2e;fuse;caps;rados"
      ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endif()
