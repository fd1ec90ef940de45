# perm: POSIX ACLs (acl.c): the xattr form's checks, the POSIX.1e decision
# with mask, and the mode interplay (equivalent ACLs, chmod, inheritance).
loligo_check_test(test_perm_acl
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_perm_acl.c
  LIBS loligo_proto loligo_perm
  LABELS unit perm
  TIMEOUT 60)
