# Two clients of one filesystem kept coherent by caps and leases
# (mds/locker.c, client/caps.c), against a real loligo-mds from the build tree.
if(TARGET loligo-mds)
  loligo_check_test(test_caps
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_caps.c
    LIBS loligo_client loligo_testlib
    LABELS integration clientlib caps
    TIMEOUT 300)
  add_dependencies(test_caps loligo-mds)
endif()
