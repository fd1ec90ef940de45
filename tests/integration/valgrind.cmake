# The daemons' shutdown paths under valgrind memcheck (owner: harden):
# loligo-mds and loligo-fuse with the embedded NFS gateway, some namespace,
# data and NFS work, then unmount + SIGTERM; memory errors or definite or
# indirect leaks fail it.  Needs root, /dev/fuse and valgrind: without them
# it is skipped, and run-make-check.sh counts a skip as a failure.
# Only in gcc builds without sanitizers: valgrind cannot run ASan binaries,
# and valgrind 3.19 cannot read clang's DWARF 5 (DW_FORM_strx/addrx).
find_program(VALGRIND_EXE valgrind)
if(NOT VALGRIND_EXE AND NOT LOLIGO_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # a build that should run it but cannot: say so as a failing test rather
  # than leaving the check out silently
  add_test(NAME valgrind_shutdown
           COMMAND sh -c "echo 'valgrind_shutdown: valgrind not found: apt-get install valgrind' >&2; exit 1")
  set_tests_properties(valgrind_shutdown PROPERTIES LABELS "integration;valgrind")
elseif(TARGET loligo-mds AND TARGET loligo-fuse AND NOT LOLIGO_SANITIZE
   AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  add_test(NAME valgrind_shutdown
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/valgrind_shutdown.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(valgrind_shutdown PROPERTIES
    LABELS "integration;valgrind"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    RUN_SERIAL TRUE)
endif()
