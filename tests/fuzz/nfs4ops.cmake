# libFuzzer target for the NFSv4 filesystem operations' decoders and checks
# (owner: nfs4ops).  As in tests/fuzz/rpc.cmake, the gateway's sources are
# compiled into the target so they carry the fuzzer's instrumentation.
loligo_fuzz_target(fuzz_nfs4ops ${CMAKE_CURRENT_LIST_DIR}/fuzz_nfs4ops.c loligo_common)
if(TARGET fuzz_nfs4ops)
  foreach(pair "loligo_rpc;nfs_gw/rpc" "loligo_nfs4;nfs_gw/nfs4")
    list(GET pair 0 lib)
    list(GET pair 1 dir)
    get_target_property(srcs ${lib} SOURCES)
    list(FILTER srcs EXCLUDE REGEX "rpcb\\.c$")   # rpcbind: no decoder, needs libtirpc
    list(TRANSFORM srcs PREPEND ${CMAKE_SOURCE_DIR}/${dir}/)
    target_sources(fuzz_nfs4ops PRIVATE ${srcs})
    get_target_property(libs ${lib} LINK_LIBRARIES)
    list(REMOVE_ITEM libs loligo_rpc)
    target_link_libraries(fuzz_nfs4ops PRIVATE ${libs})
  endforeach()
endif()
