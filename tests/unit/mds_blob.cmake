# The MDS's inode blob (mds/mdcache_codec.c): round trips, v1 blobs, truncations.
loligo_check_test(test_mds_blob
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_blob.c
  LIBS loligo_mds
  LABELS unit mds
  TIMEOUT 60)
# The MDS core in-process over the in-memory store: namespace, permissions,
# caps and a restart, through server_dispatch as the request pipeline runs it.
loligo_check_test(test_mds_core
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_core.c
  LIBS loligo_mds
  LABELS unit mds
  TIMEOUT 120)
