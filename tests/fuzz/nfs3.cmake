# libFuzzer target for the NFSv3/MOUNT decoders and dispatch (owner: nfs3).
# As in rpc.cmake, the gateway's sources are compiled in for coverage.
loligo_fuzz_target(fuzz_nfs3 ${CMAKE_CURRENT_LIST_DIR}/fuzz_nfs3.c loligo_common)
if(TARGET fuzz_nfs3)
  foreach(pair "loligo_rpc;nfs_gw/rpc" "loligo_nfs3;nfs_gw/nfs3")
    list(GET pair 0 lib)
    list(GET pair 1 dir)
    get_target_property(srcs ${lib} SOURCES)
    list(FILTER srcs EXCLUDE REGEX "rpcb\\.c$")   # rpcbind: no decoder, needs libtirpc
    list(TRANSFORM srcs PREPEND ${CMAKE_SOURCE_DIR}/${dir}/)
    target_sources(fuzz_nfs3 PRIVATE ${srcs})
    get_target_property(libs ${lib} LINK_LIBRARIES)
    list(REMOVE_ITEM libs loligo_rpc loligo_nfs3)
    target_link_libraries(fuzz_nfs3 PRIVATE ${libs})
  endforeach()
endif()
