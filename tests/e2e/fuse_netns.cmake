# MDS failover between daemons that stand for separate machines (issue 19):
# mds.a and mds.b each in a network namespace of its own, the mount in the
# root namespace reaching them over veth pairs (private /30s that exist only
# on those veths).  kill -9 of the active, a partition of the active from
# the client (it keeps its rank), mds fail.  Needs root and `ip netns`
# (skipped, 77, without them).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_netns
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_netns.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_store loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_netns loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_netns PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
