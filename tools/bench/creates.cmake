# creates: file creates/s from one thread (plain, and the way tar -x makes a
# small file), for run-untar.sh (issue 13.3's small-file rows).
add_executable(creates ${CMAKE_CURRENT_LIST_DIR}/creates.c)
