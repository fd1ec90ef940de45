# The NFS gateway against a real loligo-mds through the real client
# library, over real sockets (test_nfs_wire.h is the harness).
if(TARGET loligo-mds AND TARGET loligo_gw)
  loligo_check_test(test_nfs_gw
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs_gw.c
    LIBS loligo_gw loligo_client loligo_mds_wire
    LABELS integration nfs
    TIMEOUT 240)
  target_include_directories(test_nfs_gw PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  add_dependencies(test_nfs_gw loligo-mds)
endif()

# The gateway and a real rpcbind, in a private mount+network namespace of
# its own (rpcbind fetched with apt-get download, never installed).
if(TARGET loligo-mds AND TARGET loligo-fuse)
  add_test(NAME nfs_rpcbind COMMAND ${CMAKE_CURRENT_LIST_DIR}/nfs_rpcbind.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(nfs_rpcbind PROPERTIES LABELS "integration;nfs" TIMEOUT 120)
endif()

# RPCSEC_GSS (krb5, krb5i, krb5p) against a real MIT KDC the test starts on
# loopback (nfs_gss_kdc.sh makes the realm); skipped (77) only without krb5kdc.
if(TARGET loligo-mds AND TARGET loligo_gw)
  loligo_check_test(test_nfs_gss
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs_gss.c
    LIBS loligo_gw loligo_client loligo_mds_wire
    LABELS integration nfs
    TIMEOUT 300)
  target_include_directories(test_nfs_gss PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(test_nfs_gss PRIVATE SRCDIR="${CMAKE_CURRENT_LIST_DIR}")
  set_tests_properties(test_nfs_gss PROPERTIES SKIP_RETURN_CODE 77)
  add_dependencies(test_nfs_gss loligo-mds)
endif()
