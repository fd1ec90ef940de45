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
