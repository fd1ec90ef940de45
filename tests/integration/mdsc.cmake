# The client's MDS session layer against the real loligo-mds (fork/exec from
# the build tree, temp store, ephemeral port): 32 concurrent threads,
# UNSAFE-before-SAFE with a delayed journal, kill -9 of the MDS during a
# workload, a dead MDS at open time.  The session layer's sources are
# compiled in so the suite does not depend on the rest of libloligo-client.
if(TARGET loligo-mds)
  loligo_check_test(test_mdsc_mds
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mdsc_mds.c
            ${CMAKE_SOURCE_DIR}/client/mds_client.c
            ${CMAKE_SOURCE_DIR}/client/intr.c
            ${CMAKE_SOURCE_DIR}/client/opwait.c
            ${CMAKE_SOURCE_DIR}/client/mds_client_session.c
            ${CMAKE_SOURCE_DIR}/client/mds_client_conn.c
            ${CMAKE_SOURCE_DIR}/client/mds_client_auth.c
    LIBS loligo_mds_wire loligo_proto loligo_common PkgConfig::URCU
    LABELS integration client mdsc
    TIMEOUT 240)
  add_dependencies(test_mdsc_mds loligo-mds)
endif()
