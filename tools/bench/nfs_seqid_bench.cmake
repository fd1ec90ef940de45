# nfs_seqid_bench (owner: nfs4ops): OPEN/CLOSE from one open-owner at 1..K
# requests in flight, NFSv4.0 vs 4.1; see docs/BENCHMARKS.md.
add_executable(nfs_seqid_bench ${CMAKE_CURRENT_LIST_DIR}/nfs_seqid_bench.c)
target_include_directories(nfs_seqid_bench PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(nfs_seqid_bench PRIVATE loligo_common)   # common/io.h
