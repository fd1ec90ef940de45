# A dead OSD under load, end to end (issue 9.4): a real single-node Ceph
# cluster (bluestore), loligo-mds and a loligo-fuse mount on RADOS; the OSD
# is killed and restarted; the same mount carries on and every fsync'd byte
# is there.  Needs root and /dev/fuse; fails, loudly, when the cluster
# cannot be started.
if(LOLIGO_RADOS AND TARGET loligo-fuse)
  add_test(NAME rados_osd_restart
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rados_osd_restart.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(rados_osd_restart PROPERTIES
    TIMEOUT 300
    RUN_SERIAL TRUE
    LABELS "integration;rados;e2e"
    ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
