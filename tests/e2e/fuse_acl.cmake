# POSIX ACLs through a FUSE mount with -o acl (issue 22.3): named users and
# groups, the mask and chmod, equivalent ACLs, malformed ones, default ACL
# inheritance, step for step against a local ext4 (or tmpfs) as unprivileged
# users; setfacl/getfacl through the mount.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_acl
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_acl.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_acl loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_acl PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
