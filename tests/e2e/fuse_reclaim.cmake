# A crashed client comes back at once (issue 19.4): a loligo-fuse restarted
# after kill -9 with the same name and mount point reclaims its dead
# predecessor's session (client/reclaim.c, mds/session.c), so another
# client's create in a directory the dead one held goes through and the
# remount serves without waiting for mds_session_timeout; a second live
# process with the same name and mount point is refused; a gateway alone
# restarted on its address releases the locks its NFS clients held; a live
# client cut off from the MDS keeps its session (it reconnects, nothing
# reclaims it).
if(TARGET loligo-fuse AND TARGET loligo-mds AND TARGET loligo_gw)
  loligo_check_test(test_fuse_reclaim
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_reclaim.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_gw loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 300)
  add_dependencies(test_fuse_reclaim loligo-fuse loligo-mds latency_proxy)
  set_tests_properties(test_fuse_reclaim PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
