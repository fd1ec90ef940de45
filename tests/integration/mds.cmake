# Integration suites of loligo-mds: each test starts the real daemon
# (fork/exec) on a temporary store and an ephemeral loopback port.
# (the wire client and daemon harness, loligo_mds_wire, is defined with the
# benchmarks that use it too: tools/bench/mds_wire.cmake)

foreach(t namespace recovery badinput store_damage faults auth purge locks)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_mds_${t}.c)
    loligo_check_test(test_mds_${t}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_${t}.c
      LIBS loligo_testlib loligo_mds_wire loligo_mds loligo_store loligo_proto loligo_common
      LABELS integration mds
      TIMEOUT 120)
    add_dependencies(test_mds_${t} loligo-mds)
    if(TARGET loligo-fuse AND t STREQUAL "auth")
      add_dependencies(test_mds_${t} loligo-fuse)   # started with a keyring others may read
    endif()
    if(TARGET loligo AND t STREQUAL "faults")
      add_dependencies(test_mds_${t} loligo)   # runs `loligo -s`
    endif()
  endif()
endforeach()
