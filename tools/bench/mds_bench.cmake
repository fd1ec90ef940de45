# mds_bench: create+getattr+unlink ops/s of loligo-mds with N sessions, and
# the journal's mutations per write (see the top of mds_bench.c).
add_executable(mds_bench ${CMAKE_CURRENT_LIST_DIR}/mds_bench.c)
target_link_libraries(mds_bench PRIVATE loligo_mds_wire loligo_proto loligo_common Threads::Threads)
add_dependencies(mds_bench loligo-mds)
