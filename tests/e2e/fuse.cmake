# loligo_fuse_rados_test(NAME TARGET): the e2e suite TARGET again on a real
# single-node Ceph cluster (fuse_suite_rados.sh starts and wipes it; the
# harness puts the filesystem on RADOS when LOLIGO_E2E_RADOS_CONF is set).
function(loligo_fuse_rados_test name target)
  if(LOLIGO_RADOS)
    add_test(NAME fuse_${name}_rados
             COMMAND bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/fuse_suite_rados.sh ${name} $<TARGET_FILE:${target}>)
    set_tests_properties(fuse_${name}_rados PROPERTIES
      TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      LABELS "e2e;fuse;rados"
      ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endfunction()

# loligo_fuse_suite(NAME TIMEOUT): tests/e2e/test_fuse_NAME.c on the harness
# (real daemons, real mounts), run alone, 77 = skipped; and again on RADOS.
function(loligo_fuse_suite name timeout)
  loligo_check_test(test_fuse_${name}
    SOURCES ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/test_fuse_${name}.c ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT ${timeout})
  add_dependencies(test_fuse_${name} loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_${name} PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  loligo_fuse_rados_test(${name} test_fuse_${name})
endfunction()

# FUSE end-to-end suite: a real loligo-mds and a real loligo-fuse mount on
# temporary directories and ephemeral ports (needs root and /dev/fuse; exits
# 77, reported as skipped, without them).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse loligo-fuse loligo-mds)
  set_tests_properties(test_fuse PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
# The embedded local store seen through FUSE: several client processes on one
# filesystem (and, later in this file, a full disk and a damaged store).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_store
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_store.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse store
    TIMEOUT 300)
  add_dependencies(test_fuse_store loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_store PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()

# POSIX and size limits against what ext4 does (owner: posix): max_file_size,
# purges that cost what exists and stop on SIGTERM, permissions as
# unprivileged users through the default mount.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_posix
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_posix.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_store loligo_common
    LABELS e2e fuse
    TIMEOUT 600)
  add_dependencies(test_fuse_posix loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_posix PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()

# Waiting is bounded where users expect it (issue 9.7): statfs without the
# MDS, interruptible waits for the MDS (FUSE_INTERRUPT), an inherited fd's
# close(), the "waiting for the MDS" log line.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_waits
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_waits.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse
    TIMEOUT 300)
  add_dependencies(test_fuse_waits loligo-fuse loligo-mds)
  set_tests_properties(test_fuse_waits PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()

# File locks and eviction through two mounts (issue 10.3, 10.4): fcntl and
# flock across clients, waits, signals, an MDS restart, the fence.  On RADOS
# too (fuse_suite_rados.sh starts a real Ceph cluster).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_locks
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_locks.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse locks
    TIMEOUT 600)
  add_dependencies(test_fuse_locks loligo-fuse loligo-mds latency_proxy)
  set_tests_properties(test_fuse_locks PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  if(LOLIGO_RADOS)
    add_test(NAME fuse_locks_rados
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuse_suite_rados.sh locks $<TARGET_FILE:test_fuse_locks>)
    set_tests_properties(fuse_locks_rados PROPERTIES
      TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      LABELS "e2e;fuse;locks;rados"
      ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endif()

# Never hangs (issue 24): 20 processes on two mounts of one filesystem mixing
# every operation that writes back, syncs, truncates and renames, for
# LOLIGO_STRESS_SECONDS (60); a watchdog dumps the daemons' stacks and fails
# when a process makes no progress for 30 s; a checker compares the mounts.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_check_test(test_fuse_stress
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuse_stress.c ${CMAKE_CURRENT_LIST_DIR}/test_fuse_harness.c
    LIBS loligo_proto loligo_common
    LABELS e2e fuse stress
    TIMEOUT 600)
  add_dependencies(test_fuse_stress loligo-fuse loligo-mds loligo)
  set_tests_properties(test_fuse_stress PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()

# The Linux file semantics programs rely on (issue 25), through two mounts of
# one filesystem: what ext4 shows, case by case.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(semantics 600)
endif()

# The Linux semantics administrators and programs rely on (issue 25, items
# 4-7 and 10): remount through the mount helper, dev/suid through it, file
# capabilities and kill-priv, fs.protected_hardlinks as it is now,
# RENAME_WHITEOUT.  Changes fs.protected_hardlinks while it runs (restored
# by the fixture).
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(admin 600)
endif()

# O_TMPFILE (issue 25 item 10a): a nameless file, linkat giving it a name
# seen by another mount and kept across a journal replay, its purge at the
# last close, O_EXCL, permissions.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(tmpfile 600)
endif()

# Space and the data path as programs rely on them (issue 25, items 3, 11,
# 12, 13): fallocate reserves (ENOSPC up front, writes into the range on a
# full disk), st_blocks is what is stored, lseek SEEK_DATA/SEEK_HOLE (and
# cp --sparse=auto), ZERO_RANGE, chattr +i/+a on two mounts, O_DIRECT writes
# against buffered readers.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(space 900)
endif()

# The client's caches bounded in bytes (issue 21.4): a stat storm of many
# more files than client_cache_memory_limit holds comes back under it
# (perf client.cache_bytes), names the kernel held invalidated for it.
if(TARGET loligo-fuse AND TARGET loligo-mds)
  loligo_fuse_suite(memlim 300)
endif()
