/*
 * bufpool.h - a few large buffers kept for the next request that needs one.
 *
 * Why: a READDIR of 1,024 entries makes two buffers of ~200-320 KB (the
 * entries, then their encoding), and glibc maps a block that big on its
 * own (the MDS sets M_MMAP_THRESHOLD to 256 KiB so that freed memory goes
 * back, see mds/main.c) and unmaps it at free: every page of every listing
 * was a fresh page fault, and every unmap a TLB shootdown on the other
 * cores.  In the MDS storm that was 1.8 page faults per request and half
 * of the MDS's CPU (docs/BENCHMARKS.md, "Big buffers from a pool").
 *
 * A pool holds at most BUFPOOL_SLOTS buffers of at most its limit each, so
 * what it keeps is bounded by slots x limit whatever the number of
 * connections or threads (the MDS charges that bound against its memory
 * limit).  bufpool_get() hands out the smallest kept buffer that is big
 * enough, or NULL (the caller allocates one with malloc as before);
 * bufpool_put() keeps a buffer of the pool's sizes when there is room,
 * replacing a smaller one when the pool is full, and frees what it does
 * not keep (so a caller may put back whatever it got or made).  Buffers are
 * plain malloc blocks: one that is freed instead of put back is simply not
 * reused.  Under AddressSanitizer a kept buffer is poisoned until handed
 * out again, so a use after put is still reported.  Thread-safe: one mutex
 * per pool, a leaf lock held for a scan of BUFPOOL_SLOTS entries.
 */
#ifndef LOLIGO_COMMON_BUFPOOL_H
#define LOLIGO_COMMON_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>

#include "common/perf.h"

#define BUFPOOL_SLOTS 8

struct bufpool {
	pthread_mutex_t lock;
	size_t min, limit;            /* the sizes of the buffers kept: smaller and bigger ones are freed */
	unsigned n;                   /* slots in use: slot[0 .. n) */
	struct {
		void *p;
		size_t cap;
	} slot[BUFPOOL_SLOTS];
	struct perf_counter hits, misses; /* gets answered from the pool, and not */
};

/** bufpool_init - an empty pool that keeps buffers of @min to @limit bytes. */
void bufpool_init(struct bufpool *bp, size_t min, size_t limit);
/** bufpool_destroy - free every kept buffer. */
void bufpool_destroy(struct bufpool *bp);
/**
 * bufpool_get - a kept buffer of at least @want bytes (its size in *@cap),
 * or NULL when there is none: the caller mallocs.
 */
void *bufpool_get(struct bufpool *bp, size_t want, size_t *cap);
/** bufpool_put - give @p (@cap bytes, from malloc or bufpool_get) to @bp, which keeps or frees it (NULL: nothing). */
void bufpool_put(struct bufpool *bp, void *p, size_t cap);

#endif
