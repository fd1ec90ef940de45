# File layouts (issue 22.4): loligo.{file,dir}.layout set and inherited, set
# only on empty files, a file striped over 4 objects written on one mount and
# read, truncated and punched through a second, its objects in the data pool
# where the striping says.  Again on RADOS (fuse_layout_rados).
loligo_fuse_suite(layout 600 RADOS LIBS loligo_proto loligo_store loligo_common)
# The case "ec_pool": file data in an erasure-coded pool, on a cluster of its
# own that can hold one (3 BlueStore OSDs; fuse_layout_ec_rados.sh says why).
if(TARGET loligo-fuse AND TARGET loligo-mds AND LOLIGO_RADOS)
  add_test(NAME fuse_layout_ec_rados
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuse_layout_ec_rados.sh $<TARGET_FILE:test_fuse_layout>)
  set_tests_properties(fuse_layout_ec_rados PROPERTIES
    TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77
    LABELS "e2e;fuse;rados"
    ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
