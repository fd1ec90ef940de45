# NFS gateway end-to-end suite (owner: nfs4ops): a real loligo-mds, a real
# loligo-fuse with the embedded gateway, and the Linux kernel NFS client
# booted under qemu by the project's copy of the kclient script
# (tests/e2e/nfs/run-kernel-client.sh, which adds NFSv3), for vers=4.1, 4.0
# and 3.  tests/e2e/nfs/run-nfs-e2e.sh is the driver; a missing
# prerequisite (root, /dev/fuse, qemu, the kclient script, static libc,
# nfs_badinput) FAILS it with what to install: never a silent skip.
# TIMEOUT: 16 guests of 5-15 s each with KVM; without it (TCG) the whole run
# took 360 s at load ~11 and a guest may take a minute or more under load
# (each is bounded by KCLIENT_TIMEOUT, 420 s without KVM), so 1500 s.  A
# ctest timeout SIGKILLs the driver's whole process tree, qemu included.

# loligo-fuse links the gateway library under one of the names
# client/fuse/CMakeLists.txt looks for; nfs_gw/ builds it as loligo_gw.
if(TARGET loligo_gw AND NOT TARGET loligo_nfs_gw)
  add_library(loligo_nfs_gw INTERFACE)
  target_link_libraries(loligo_nfs_gw INTERFACE loligo_gw)
endif()

if(TARGET loligo-fuse AND TARGET loligo-mds)
  add_test(NAME nfs_kclient_e2e
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/nfs/run-nfs-e2e.sh ${CMAKE_BINARY_DIR} 4.1 4.0 3)
  set_tests_properties(nfs_kclient_e2e PROPERTIES LABELS "e2e;nfs" TIMEOUT 1500
                       RUN_SERIAL TRUE)
endif()

# The bad-input client the driver runs against the live gateway.
add_executable(nfs_badinput ${CMAKE_CURRENT_LIST_DIR}/nfs/nfs_badinput.c)
target_include_directories(nfs_badinput PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(nfs_badinput PRIVATE loligo_common)   # tools/bench/nfs4_wire.h uses common/io.h
if(TARGET loligo)
  add_dependencies(nfs_badinput loligo)   # the driver makes its keyrings with the CLI
endif()
