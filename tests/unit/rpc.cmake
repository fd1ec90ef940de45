# nfs_gw/rpc and nfs_gw/nfs4 core: XDR, record marking, DRC, slot table,
# and RPC over a real loopback socket.
loligo_check_test(test_xdr SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_xdr.c
                  LIBS loligo_rpc LABELS unit nfs TIMEOUT 30)
loligo_check_test(test_drc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_drc.c
                  LIBS loligo_rpc LABELS unit nfs TIMEOUT 30)
loligo_check_test(test_rpc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rpc.c
                  LIBS loligo_rpc LABELS unit nfs TIMEOUT 60)
loligo_check_test(test_slot_table SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slot_table.c
                  LIBS loligo_nfs4 LABELS unit nfs TIMEOUT 30)
loligo_check_test(test_rpc_nfs4 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rpc_nfs4.c
                  LIBS loligo_gw LABELS unit nfs TIMEOUT 60)
loligo_check_test(test_export SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_export.c
                  LIBS loligo_export LABELS unit nfs TIMEOUT 30)
loligo_check_test(test_nfs3_xdr SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs3_xdr.c
                  LIBS loligo_nfs3 LABELS unit nfs TIMEOUT 30)
# one errno -> NFS status table, both versions' columns and their exceptions
loligo_check_test(test_nfs_status SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nfs_status.c
                  LIBS loligo_nfs_status LABELS unit nfs TIMEOUT 30)
