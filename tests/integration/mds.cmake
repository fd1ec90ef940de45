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
    if(LOLIGO_RADOS AND t STREQUAL "badinput")
      # a copy of loligo-mds outside the build tree looks for the installed rados module
      target_compile_definitions(test_mds_${t} PRIVATE LOLIGO_MODULE_DIR="${CMAKE_INSTALL_FULL_LIBDIR}/loligo")
    endif()
  endif()
endforeach()

# The MDS's older connection model, a reader thread per connection
# (mds_net_loops=0; event loops are the default): the bad-input suite again,
# every daemon it starts in that mode unless a case sets the option itself.
if(TARGET test_mds_badinput)
  add_test(NAME test_mds_badinput_threads COMMAND test_mds_badinput)
  set_tests_properties(test_mds_badinput_threads PROPERTIES TIMEOUT 120
      ENVIRONMENT "CK_DEFAULT_TIMEOUT=120;LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR};LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_TEST_MDS_OPTS=--mds_net_loops=0"
      LABELS "integration;mds")
endif()

# A big directory made over the wire, listed after MDS restarts (issue 21.3):
# LOLIGO_TEST_BIGDIR_ENTRIES entries (default 50,000; 1000000 for the issue's
# size, minutes), so its own timeout.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_mds_bigdir.c)
  loligo_check_test(test_mds_bigdir
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_bigdir.c
    LIBS loligo_testlib loligo_mds_wire loligo_mds loligo_store loligo_proto loligo_common
    LABELS integration mds
    TIMEOUT 900)
  add_dependencies(test_mds_bigdir loligo-mds)
endif()

if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_mds_memlim.c)
  loligo_check_test(test_mds_memlim
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mds_memlim.c
    LIBS loligo_testlib loligo_mds_wire loligo_mds loligo_store loligo_proto loligo_common PkgConfig::JSONC
    LABELS integration mds
    TIMEOUT 300)
  add_dependencies(test_mds_memlim loligo-mds)
endif()
