# fusefloor: a FUSE filesystem that does nothing, the floor of the small-file
# rows (docs/BENCHMARKS.md, issue 13.3).
add_executable(fusefloor ${CMAKE_CURRENT_LIST_DIR}/fusefloor.c)
target_link_libraries(fusefloor PRIVATE PkgConfig::FUSE3 Threads::Threads)
