# libFuzzer target for the MDS journal's decoders and damage checker; its
# sources are compiled in so they carry the fuzzer's instrumentation.
loligo_fuzz_target(fuzz_journal ${CMAKE_CURRENT_LIST_DIR}/fuzz_journal.c loligo_proto_fuzz)
if(TARGET fuzz_journal)
  target_sources(fuzz_journal PRIVATE ${CMAKE_SOURCE_DIR}/mds/journal_fmt.c ${CMAKE_SOURCE_DIR}/mds/codec.c)
  target_include_directories(fuzz_journal PRIVATE ${CMAKE_SOURCE_DIR})
endif()
