# mds_proto: the wire codec (round trips, truncation, corruption, bounds,
# forward compatibility) and the blocking socket helpers.
loligo_check_test(test_proto
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proto.c
  LIBS loligo_proto loligo_perm
  LABELS unit proto
  TIMEOUT 120)
loligo_check_test(test_proto_sock
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proto_sock.c
  LIBS loligo_proto
  LABELS unit proto
  TIMEOUT 60)
# the extent sets behind st_blocks, against a block bitmap
loligo_check_test(test_extents
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_extents.c
  LIBS loligo_proto
  LABELS unit proto
  TIMEOUT 60)
# caps mds: the parser (good, bad, garbage) and caps in keyring files
loligo_check_test(test_mdscaps
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mdscaps.c
  LIBS loligo_proto
  LABELS unit proto auth
  TIMEOUT 60)
