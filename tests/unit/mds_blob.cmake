# The MDS's inode blob (mds/mdcache.c): round trips, v1 blobs, truncations.
loligo_check_test(test_mds_blob
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_blob.c
  LIBS loligo_mds
  LABELS unit mds
  TIMEOUT 60)
