# mds_proto: one libFuzzer target per decoder (LOLIGO_FUZZ=ON, clang), each
# run by ctest for LOLIGO_FUZZ_SECONDS over its seeds in seeds/<target>/.
foreach(t frame session request reply caps command auth)
  loligo_fuzz_target(fuzz_proto_${t} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_proto_${t}.c
                     loligo_proto_fuzz)
endforeach()
if(LOLIGO_FUZZ)
  # regenerates seeds/fuzz_proto_* from the encoder (not run by ctest)
  add_executable(proto_seedgen ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/proto_seedgen.c)
  target_link_libraries(proto_seedgen PRIVATE loligo_proto)
endif()
