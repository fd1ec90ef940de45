/*
 * store_inline_env.h - the local store's inline limit for a test run.
 *
 * The store suites run several times (tests/unit/store.cmake): with the
 * default limit, with inline objects off (every object a file, the path
 * every big object takes) and with a limit of 100 bytes, so that objects
 * that start small and grow spill to their files all through the generic
 * cases.  LOLIGO_STORE_LOCAL_INLINE_MAX is "off" or a byte count.
 */
#ifndef LOLIGO_TESTS_STORE_INLINE_ENV_H
#define LOLIGO_TESTS_STORE_INLINE_ENV_H

#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static inline uint64_t test_store_inline_max(void)
{
	const char *v = getenv("LOLIGO_STORE_LOCAL_INLINE_MAX");

	if (!v || !*v)
		return 0;      /* the default */
	if (!strcmp(v, "off"))
		return STORE_LOCAL_INLINE_OFF;
	return strtoull(v, NULL, 0);
}

#endif
