# The client's MDS session layer (client/mds_client*.c) against a scripted
# fake MDS in the test: UNSAFE/SAFE ordering, oldest_tid, reconnect replay
# order, refused reconnects, bounded open and request timeouts.  The session
# layer's sources are compiled in directly so the suite does not depend on
# the rest of libloligo-client.
loligo_check_test(test_mdsc
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mdsc.c
          ${CMAKE_SOURCE_DIR}/client/mds_client.c
          ${CMAKE_SOURCE_DIR}/client/intr.c
            ${CMAKE_SOURCE_DIR}/client/opwait.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_session.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_conn.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_auth.c
  LIBS loligo_proto loligo_common PkgConfig::URCU
  LABELS unit client mdsc
  TIMEOUT 120)
# the waiter's fast path: mdsc_test_before_sleep opens its race window
target_compile_definitions(test_mdsc PRIVATE MDSC_TEST_HOOKS)
# oldest_tid never passes a live request: many threads register and complete
# requests out of order in the real request map, and a checker runs after
# every publication (MDSC_TEST_HOOKS: the hook exists in this build only).
loligo_check_test(test_mdsc_oldest
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mdsc_oldest.c
          ${CMAKE_CURRENT_LIST_DIR}/mdsc_test_find.c
          ${CMAKE_SOURCE_DIR}/client/intr.c
            ${CMAKE_SOURCE_DIR}/client/opwait.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_session.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_conn.c
          ${CMAKE_SOURCE_DIR}/client/mds_client_auth.c
  LIBS loligo_proto loligo_common PkgConfig::URCU
  LABELS unit client mdsc
  TIMEOUT 120)
target_compile_definitions(test_mdsc_oldest PRIVATE MDSC_TEST_HOOKS)
