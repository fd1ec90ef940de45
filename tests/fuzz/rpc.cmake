# libFuzzer targets for the NFS gateway's decoders (built with -DLOLIGO_FUZZ=ON, CC=clang).
# The gateway's own sources are compiled into each target (rather than
# linked from the libraries) so they carry the fuzzer's coverage
# instrumentation; the libraries they depend on are linked as usual.
function(loligo_rpc_fuzz_sources target lib dir)
  if(NOT TARGET ${target})
    return()
  endif()
  get_target_property(srcs ${lib} SOURCES)
  list(FILTER srcs EXCLUDE REGEX "rpcb\\.c$")   # rpcbind: no decoder, needs libtirpc
  list(TRANSFORM srcs PREPEND ${CMAKE_SOURCE_DIR}/${dir}/)
  target_sources(${target} PRIVATE ${srcs})
  get_target_property(libs ${lib} LINK_LIBRARIES)
  list(REMOVE_ITEM libs loligo_rpc)
  target_link_libraries(${target} PRIVATE ${libs})
endfunction()

loligo_fuzz_target(fuzz_rpc_call ${CMAKE_CURRENT_LIST_DIR}/fuzz_rpc_call.c loligo_common)
loligo_rpc_fuzz_sources(fuzz_rpc_call loligo_rpc nfs_gw/rpc)

loligo_fuzz_target(fuzz_rpc_nfs4 ${CMAKE_CURRENT_LIST_DIR}/fuzz_rpc_nfs4.c loligo_common)
loligo_rpc_fuzz_sources(fuzz_rpc_nfs4 loligo_rpc nfs_gw/rpc)
loligo_rpc_fuzz_sources(fuzz_rpc_nfs4 loligo_nfs4 nfs_gw/nfs4)

# the answers to our NFSv4 callbacks and the callback security a client offers (owner: deleg)
loligo_fuzz_target(fuzz_nfs4_cb ${CMAKE_CURRENT_LIST_DIR}/fuzz_nfs4_cb.c loligo_common)
loligo_rpc_fuzz_sources(fuzz_nfs4_cb loligo_rpc nfs_gw/rpc)
loligo_rpc_fuzz_sources(fuzz_nfs4_cb loligo_nfs4 nfs_gw/nfs4)
