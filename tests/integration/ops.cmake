# Operating loligo (issue 11): signals and logs, logrotate, the CLI, statfs
# and the Prometheus endpoint against a real loligo-mds and loligo-fuse, in a
# PID and mount namespace of their own (tests/integration/ops_daemons.sh).
if(TARGET loligo-mds AND TARGET loligo-fuse AND TARGET loligo)
  add_test(NAME ops_daemons COMMAND ${CMAKE_CURRENT_LIST_DIR}/ops_daemons.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(ops_daemons PROPERTIES LABELS "integration;ops" TIMEOUT 180)
endif()

# The benchmark plots of docs/BENCHMARKS.md (issue 11.8): tools/bench/plot-bench.sh
# on inputs in the benchmarks' formats (tests/integration/plot_bench.sh; gnuplot).
add_test(NAME plot_bench COMMAND ${CMAKE_CURRENT_LIST_DIR}/plot_bench.sh)
set_tests_properties(plot_bench PROPERTIES LABELS "integration;ops" TIMEOUT 60)
