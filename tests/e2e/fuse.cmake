# loligo_fuse_rados_test(NAME TARGET [LABEL...]): the e2e suite TARGET again
# on a real single-node Ceph cluster (fuse_suite_rados.sh starts and wipes it;
# the harness puts the filesystem on RADOS when LOLIGO_E2E_RADOS_CONF is set).
function(loligo_fuse_rados_test name target)
  if(LOLIGO_RADOS)
    add_test(NAME fuse_${name}_rados
             COMMAND bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/fuse_suite_rados.sh ${name} $<TARGET_FILE:${target}>)
    string(JOIN ";" labels e2e fuse ${ARGN} rados)
    set_tests_properties(fuse_${name}_rados PROPERTIES
      TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      LABELS "${labels}"
      ENVIRONMENT "LOLIGO_SOURCE_DIR=${CMAKE_SOURCE_DIR};LOLIGO_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endfunction()

# loligo_fuse_suite(NAME TIMEOUT [RADOS] [LIBS lib...] [LABELS label...]
#                   [DEPENDS target...])
#   tests/e2e/test_fuse_NAME.c (NAME "main": test_fuse.c) on the harness
#   (real daemons, real mounts) as ctest test_fuse_NAME, run alone, exit 77 =
#   skipped (no root or /dev/fuse); with RADOS also as fuse_NAME_rados on a
#   real Ceph cluster.  LIBS defaults to loligo_proto loligo_common.
function(loligo_fuse_suite name timeout)
  cmake_parse_arguments(S "RADOS" "" "LIBS;LABELS;DEPENDS" ${ARGN})
  if(NOT TARGET loligo-fuse OR NOT TARGET loligo-mds)
    return()
  endif()
  if(name STREQUAL "main")
    set(t test_fuse)
  else()
    set(t test_fuse_${name})
  endif()
  if(NOT S_LIBS)
    set(S_LIBS loligo_proto loligo_common)
  endif()
  loligo_check_test(${t}
    SOURCES ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${t}.c ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/test_fuse_harness.c
    LIBS ${S_LIBS}
    LABELS e2e fuse ${S_LABELS}
    TIMEOUT ${timeout})
  add_dependencies(${t} loligo-fuse loligo-mds ${S_DEPENDS})
  set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  if(S_RADOS)
    loligo_fuse_rados_test(${name} ${t} ${S_LABELS})
  endif()
endfunction()

# FUSE end-to-end suite: a real loligo-mds and a real loligo-fuse mount on
# temporary directories and ephemeral ports (needs root and /dev/fuse; exits
# 77, reported as skipped, without them).
loligo_fuse_suite(main 600)
# The embedded local store seen through FUSE: several client processes on one
# filesystem (and, later in this file, a full disk and a damaged store).
loligo_fuse_suite(store 300 LABELS store)

# POSIX and size limits against what ext4 does (owner: posix): max_file_size,
# purges that cost what exists and stop on SIGTERM, permissions as
# unprivileged users through the default mount.
loligo_fuse_suite(posix 600 LIBS loligo_proto loligo_store loligo_common)

# Waiting is bounded where users expect it (issue 9.7): statfs without the
# MDS, interruptible waits for the MDS (FUSE_INTERRUPT), an inherited fd's
# close(), the "waiting for the MDS" log line.
loligo_fuse_suite(waits 300)

# File locks and eviction through two mounts (issue 10.3, 10.4): fcntl and
# flock across clients, waits, signals, an MDS restart, the fence.  On RADOS
# too (fuse_suite_rados.sh starts a real Ceph cluster).
loligo_fuse_suite(locks 600 RADOS LABELS locks DEPENDS latency_proxy)

# Never hangs (issue 24): 20 processes on two mounts of one filesystem mixing
# every operation that writes back, syncs, truncates and renames, for
# LOLIGO_STRESS_SECONDS (60); a watchdog dumps the daemons' stacks and fails
# when a process makes no progress for 30 s; a checker compares the mounts.
loligo_fuse_suite(stress 600 LABELS stress DEPENDS loligo)

# The Linux file semantics programs rely on (issue 25), through two mounts of
# one filesystem: what ext4 shows, case by case.
loligo_fuse_suite(semantics 600 RADOS)

# The Linux semantics administrators and programs rely on (issue 25, items
# 4-7 and 10): remount through the mount helper, dev/suid through it, file
# capabilities and kill-priv, fs.protected_hardlinks as it is now,
# RENAME_WHITEOUT.  Changes fs.protected_hardlinks while it runs (restored
# by the fixture).
loligo_fuse_suite(admin 600 RADOS)

# O_TMPFILE (issue 25 item 10a): a nameless file, linkat giving it a name
# seen by another mount and kept across a journal replay, its purge at the
# last close, O_EXCL, permissions.
loligo_fuse_suite(tmpfile 600 RADOS)

# Space and the data path as programs rely on them (issue 25, items 3, 11,
# 12, 13): fallocate reserves (ENOSPC up front, writes into the range on a
# full disk), st_blocks is what is stored, lseek SEEK_DATA/SEEK_HOLE (and
# cp --sparse=auto), ZERO_RANGE, chattr +i/+a on two mounts, O_DIRECT writes
# against buffered readers.
loligo_fuse_suite(space 900 RADOS)

# The client's caches bounded in bytes (issue 21.4): a stat storm of many
# more files than client_cache_memory_limit holds comes back under it
# (perf client.cache_bytes), names the kernel held invalidated for it.
loligo_fuse_suite(memlim 300 RADOS)
