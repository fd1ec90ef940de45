# The benchmark driver tools/bench/run-mdstorm.sh as a test (issue 18): the
# --contended --locking before storm, which once deadlocked loligo-fuse, runs
# to completion under a watchdog; a SIGTERM mid-run, with loligo-fuse healthy
# and hung, leaves no process, mount or temp dir behind.  Needs /dev/fuse,
# jq, cc and ../shared/bench/mdstorm.c (77, skipped, without them).
if(TARGET loligo-mds AND TARGET loligo-fuse AND TARGET loligo)
  add_test(NAME bench_mdstorm COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_mdstorm.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(bench_mdstorm PROPERTIES LABELS "integration;bench;fuse" TIMEOUT 600
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
