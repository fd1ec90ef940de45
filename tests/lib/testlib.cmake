# loligo_testlib: what the suites share (tests/lib): waits for events
# (wait.h), daemons and suite mains (daemon.h).  Linked by the suites that
# use it; it builds on loligo_mds_wire (tools/bench/mds_wire.cmake).
add_library(loligo_testlib STATIC ${CMAKE_CURRENT_LIST_DIR}/daemon.c)
target_link_libraries(loligo_testlib PUBLIC loligo_mds_wire PkgConfig::CHECK Threads::Threads)
