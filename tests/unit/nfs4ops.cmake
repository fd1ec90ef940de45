# NFSv4 operations' building blocks (owner: nfs4ops): file handles,
# exports, fattr4, stateids, 4.0 owner sequencing, byte-range locks.
if(TARGET loligo_nfs4)
  loligo_check_test(test_nfs4ops
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs4ops.c
    LIBS loligo_nfs4
    LABELS unit nfs
    TIMEOUT 60)
  # NFSv4 client records' format and keys (nfs_gw/nfs4/recovery.c)
  loligo_check_test(test_nfs4_recovery
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs4_recovery.c
    LIBS loligo_nfs4
    LABELS unit nfs
    TIMEOUT 60)
  # NFSv4 owner strings (nfs_gw/nfs4/idmap.c) through this machine's NSS
  loligo_check_test(test_idmap
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_idmap.c
    LIBS loligo_nfs4
    LABELS unit nfs
    TIMEOUT 60)
endif()
