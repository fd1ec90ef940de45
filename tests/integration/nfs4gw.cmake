# NFSv4.0/4.1 conformance of the gateway (owner: nfs4conf): raw COMPOUNDs
# over loopback TCP to a gateway serving a real client library mounted on a
# real loligo-mds (tests/integration/test_nfs4_gw.c).
if(TARGET loligo-mds AND TARGET loligo_gw)
  foreach(t test_nfs4_gw test_nfs4_gw_state test_nfs4_gw_clients test_nfs4_gw_cb test_nfs4_gw_locks test_nfs4_gw_recovery
          test_nfs4_gw_takeover test_nfs4_gw_acl)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
      loligo_check_test(${t}
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
        LIBS loligo_gw loligo_client loligo_testlib
        LABELS integration nfs
        TIMEOUT 300)
      add_dependencies(${t} loligo-mds)
    endif()
    if(t STREQUAL "test_nfs4_gw_takeover" AND TEST ${t})
      # network namespaces: root and iproute2, else it says so and skips
      set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 LABELS "integration;nfs;netns")
    endif()
  endforeach()
endif()
