# bigdir: make, list, look up in and create into a big directory of
# loligo-mds over the wire (see the top of bigdir.c; run-bigdir.sh uses it).
add_executable(bigdir ${CMAKE_CURRENT_LIST_DIR}/bigdir.c)
target_link_libraries(bigdir PRIVATE loligo_mds_wire loligo_proto loligo_common Threads::Threads)
