# The MDS journal's on-disk format and damage checker (mds/journal_fmt.c):
# round trips, truncations and flips, and whole in-memory journals with a
# torn tail, flipped bytes, missing or moved segments and sequence gaps.
loligo_check_test(test_journal_fmt
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_journal_fmt.c
  LIBS loligo_mds
  LABELS unit mds journal
  TIMEOUT 60)
