# The object store conformance suite against a real single-node Ceph
# cluster (started and wiped by store_rados.sh from ../shared/ceph), then
# runs the client library's data path tests on it (case "rados" of
# test_clientlib_data), then kills the cluster under an open store to check
# ops fail fast.  It
# fails, loudly, when the cluster cannot be started.
if(LOLIGO_RADOS)
  add_test(NAME store_rados_conformance
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store_rados.sh $<TARGET_FILE:test_store_conformance>
                   $<TARGET_FILE:test_store_rados> $<TARGET_FILE:test_clientlib_data>)
  set_tests_properties(store_rados_conformance PROPERTIES
    TIMEOUT 300
    LABELS "integration;store;rados"
    ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
