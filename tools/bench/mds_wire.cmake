# loligo_mds_wire: a synchronous MDS wire client (mdsw) and a loligo-mds
# process harness (mdsproc), built from the shipped protocol library only.
# mds_bench speaks the wire with it; the integration suites under tests/
# link it from here (benchmarks never link a library defined under tests/).
add_library(loligo_mds_wire STATIC ${CMAKE_CURRENT_LIST_DIR}/mds_wire.c)
target_link_libraries(loligo_mds_wire PUBLIC loligo_proto loligo_common)
