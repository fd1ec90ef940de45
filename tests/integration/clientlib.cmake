# libloligo-client (client.h) against a real loligo-mds from the build tree.
if(TARGET loligo-mds)
  loligo_check_test(test_clientlib_mds
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_clientlib_mds.c
    LIBS loligo_client loligo_testlib
    LABELS integration clientlib
    TIMEOUT 240)
  add_dependencies(test_clientlib_mds loligo-mds)
endif()
