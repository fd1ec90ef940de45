# Unit suites of common/ and of the loligo CLI (tools/cli).
loligo_check_test(test_log SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_log.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_crc32c SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_crc32c.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_perf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_perf.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_admin_sock SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_admin_sock.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_xarray SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_xarray.c
                  LIBS loligo_common LABELS unit common TIMEOUT 120)
if(TARGET loligo AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_cli.c)
  loligo_check_test(test_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli.c
                    LIBS loligo_common LABELS unit common cli TIMEOUT 60)
  add_dependencies(test_cli loligo)
  set_property(TEST test_cli APPEND PROPERTY ENVIRONMENT "LOLIGO_CLI=$<TARGET_FILE:loligo>")
endif()
loligo_check_test(test_rlock SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rlock.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
# The lock-order checker catches inversions, same-kind waits of flag locks,
# locks held across long waits and unheld _locked calls (each must abort).
if(LOLIGO_LOCKDEP)
  loligo_check_test(test_lockdep SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lockdep.c
                    LIBS loligo_common LABELS unit common TIMEOUT 60)
endif()
loligo_check_test(test_io SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_io.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
loligo_check_test(test_slab SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slab.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
# READDIR's big buffers, kept for reuse (common/bufpool.c)
loligo_check_test(test_bufpool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bufpool.c
                  LIBS loligo_common LABELS unit common TIMEOUT 60)
