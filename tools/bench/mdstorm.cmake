# mdstorm (../shared/bench/mdstorm.c) on a loligo-fuse mount and on a local
# directory in the same run: `ninja bench-mdstorm` runs run-mdstorm.sh against
# this build tree (about a minute; see docs/BENCHMARKS.md).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  add_custom_target(bench-mdstorm
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-mdstorm.sh --build ${CMAKE_BINARY_DIR}
    DEPENDS loligo-fuse loligo-mds
    USES_TERMINAL
    COMMENT "mdstorm: loligo-fuse vs a local directory")
endif()
