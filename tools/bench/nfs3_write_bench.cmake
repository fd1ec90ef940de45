# nfs3_write_bench (owner: nfs3): NFSv3 4 KiB random writes through the
# DRC, C connections x K in flight; see docs/BENCHMARKS.md.
add_executable(nfs3_write_bench ${CMAKE_CURRENT_LIST_DIR}/nfs3_write_bench.c)
target_include_directories(nfs3_write_bench PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(nfs3_write_bench PRIVATE loligo_common)   # common/io.h
