# dirsync: what an fsync of a directory costs while other files are dirty
# (issue 24), for run-fsstress.sh.
add_executable(dirsync ${CMAKE_CURRENT_LIST_DIR}/dirsync.c)
