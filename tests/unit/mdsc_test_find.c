/*
 * mdsc_test_find.c - client/mds_client.c as test_mdsc_oldest builds it: its
 * xa_find() calls go to the test's mdsc_test_xa_find(), which models a scan
 * preempted past the end of the map (see tests/unit/test_mdsc_oldest.c).
 * Nothing else changes; the real xa_find() still does the looking.
 */
#include <stdint.h>

#include "common/xarray.h"

void *mdsc_test_xa_find(struct xarray *xa, uint64_t *index);
#define xa_find(xa, idx) mdsc_test_xa_find((xa), (idx))

#include "client/mds_client.c"
