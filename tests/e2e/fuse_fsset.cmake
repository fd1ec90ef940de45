# `loligo fs set` on a running filesystem (issue 22.5): max_file_size lowered
# and raised online (EFBIG at once on the mount, kept across a kill -9 of the
# MDS), refuse_client_session, bad values refused with a reason, settings
# kept with the filesystem winning over the config file.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_fsset
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_fsset.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_fsset loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_fsset PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
