# store_bench: ops/s of small compound ops against an object store backend.
add_executable(store_bench ${CMAKE_CURRENT_LIST_DIR}/store_bench.c)
target_link_libraries(store_bench PRIVATE loligo_store)
