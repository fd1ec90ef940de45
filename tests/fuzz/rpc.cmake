# libFuzzer targets for the NFS gateway's decoders (built with -DLOLIGO_FUZZ=ON, CC=clang).
loligo_fuzz_target(fuzz_rpc_call ${CMAKE_CURRENT_LIST_DIR}/fuzz_rpc_call.c loligo_rpc)
