# libloligo-client without an MDS: data path against the local store, caches.
loligo_check_test(test_clientlib_data
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_clientlib_data.c
  LIBS loligo_client
  LABELS unit clientlib
  TIMEOUT 120)
