/*
 * bufpool.c - a few large buffers kept for reuse (see bufpool.h).
 */
#include <stdlib.h>

#include "common/bufpool.h"

#if defined(__SANITIZE_ADDRESS__)
#define BUFPOOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUFPOOL_ASAN 1
#endif
#endif

#ifdef BUFPOOL_ASAN
#include <sanitizer/asan_interface.h>
#define kept(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define handed_out(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define kept(p, n) ((void)(p), (void)(n))
#define handed_out(p, n) ((void)(p), (void)(n))
#endif

void bufpool_init(struct bufpool *bp, size_t min, size_t limit)
{
	pthread_mutex_init(&bp->lock, NULL);
	bp->min = min;
	bp->limit = limit;
	bp->n = 0;
	perf_set(&bp->hits, 0);
	perf_set(&bp->misses, 0);
}

void bufpool_destroy(struct bufpool *bp)
{
	unsigned i;

	for (i = 0; i < bp->n; i++) {
		handed_out(bp->slot[i].p, bp->slot[i].cap);
		free(bp->slot[i].p);
	}
	bp->n = 0;
	pthread_mutex_destroy(&bp->lock);
}

void *bufpool_get(struct bufpool *bp, size_t want, size_t *cap)
{
	unsigned i, best = BUFPOOL_SLOTS;
	void *p = NULL;

	*cap = 0;
	if (want < bp->min)
		return NULL;            /* not a pool's size: not counted either */
	if (want > bp->limit) {
		perf_inc(&bp->misses, 1);
		return NULL;
	}
	pthread_mutex_lock(&bp->lock);
	for (i = 0; i < bp->n; i++)
		if (bp->slot[i].cap >= want && (best == BUFPOOL_SLOTS || bp->slot[i].cap < bp->slot[best].cap))
			best = i;
	if (best < BUFPOOL_SLOTS) {
		p = bp->slot[best].p;
		*cap = bp->slot[best].cap;
		bp->slot[best] = bp->slot[--bp->n];
	}
	pthread_mutex_unlock(&bp->lock);
	perf_inc(p ? &bp->hits : &bp->misses, 1);
	if (p)
		handed_out(p, *cap);
	return p;
}

void bufpool_put(struct bufpool *bp, void *p, size_t cap)
{
	unsigned i, small = 0;

	if (!p)
		return;
	if (cap < bp->min || cap > bp->limit) {
		free(p);
		return;
	}
	kept(p, cap);
	pthread_mutex_lock(&bp->lock);
	if (bp->n < BUFPOOL_SLOTS) {
		bp->slot[bp->n].p = p;
		bp->slot[bp->n++].cap = cap;
		p = NULL;
	} else {
		/* full: keep the bigger of @p and the smallest kept one */
		for (i = 1; i < bp->n; i++)
			if (bp->slot[i].cap < bp->slot[small].cap)
				small = i;
		if (bp->slot[small].cap < cap) {
			void *q = bp->slot[small].p;
			size_t qcap = bp->slot[small].cap;

			bp->slot[small].p = p;
			bp->slot[small].cap = cap;
			p = q;
			cap = qcap;
		}
	}
	pthread_mutex_unlock(&bp->lock);
	if (p) {
		handed_out(p, cap);
		free(p);
	}
}
