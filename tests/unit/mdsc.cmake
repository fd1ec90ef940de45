# The client's MDS session layer (client/mds_client*.c) against a scripted
# fake MDS in the test: UNSAFE/SAFE ordering, oldest_tid, reconnect replay
# order, refused reconnects, bounded open and request timeouts.  The session
# layer's sources are compiled in directly so the suite does not depend on
# the rest of libloligo-client.
loligo_check_test(test_mdsc
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mdsc.c
          ${CMAKE_SOURCE_DIR}/client/mds_client.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_session.c
  LIBS loligo_proto loligo_common PkgConfig::URCU
  LABELS unit client mdsc
  TIMEOUT 120)
