# libloligo-client against a loligo-mds killed -9 between UNSAFE and SAFE
# (the mds_journal_hold test hook): replayed creates keep their inos, fsync
# returns only what is durable, nothing runs twice.
if(TARGET loligo-mds)
  loligo_check_test(test_clientlib_crash
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_clientlib_crash.c
    LIBS loligo_client loligo_testlib loligo_mds_wire
    LABELS integration clientlib mds
    TIMEOUT 300)
  add_dependencies(test_clientlib_crash loligo-mds)
endif()
