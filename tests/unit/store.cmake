# store/: the conformance suite every backend must pass (here against the
# local backend; tests/integration/store_rados.cmake runs the same binary
# against a real Ceph cluster) and the crash test of the local backend.
loligo_check_test(test_store_conformance
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_conformance.c
  LIBS loligo_store
  LABELS unit store
  TIMEOUT 120)
if(LOLIGO_RADOS)
  # fail fast: a dead cluster is an error within the timeout, not a hang
  loligo_check_test(test_store_rados
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_rados.c
    LIBS loligo_store
    LABELS unit store rados
    TIMEOUT 60)
endif()
# kill -9 a writer mid-stream: every acknowledged op survives, none is half applied
loligo_check_test(test_store_crash
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_crash.c
  LIBS loligo_store
  LABELS unit store
  TIMEOUT 120)
# several processes on one local store: concurrent writers of one object,
# kill -9 of one with effects pending, reads across processes
loligo_check_test(test_store_multi
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_multi.c
  LIBS loligo_store
  LABELS unit store
  TIMEOUT 120)
# The same suites with the local store's inline objects off (every object a
# file) and with a limit of 100 bytes (small objects that grow spill to
# their files all through the generic cases, also under kill -9).
foreach(t test_store_conformance test_store_crash test_store_multi)
  foreach(v off 100)
    add_test(NAME ${t}_inline_${v} COMMAND ${t})
    set_tests_properties(${t}_inline_${v} PROPERTIES TIMEOUT 120 LABELS "unit;store"
      ENVIRONMENT "CK_DEFAULT_TIMEOUT=120;LOLIGO_STORE_LOCAL_INLINE_MAX=${v};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR};LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  endforeach()
endforeach()
# The in-memory store (store/mem.h, the MDS core's unit suites run on it)
# keeps the same contract, minus durability.
add_test(NAME test_store_conformance_mem COMMAND test_store_conformance)
set_tests_properties(test_store_conformance_mem PROPERTIES TIMEOUT 120 LABELS "unit;store"
  ENVIRONMENT "CK_DEFAULT_TIMEOUT=120;LOLIGO_STORE_BACKEND=mem;LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR};LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
