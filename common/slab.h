/*
 * slab.h - size classes for long-lived small objects, kept apart from the
 * rest of the heap (the MDS cache's inodes, dentries, caps, leases).
 *
 * Why: glibc's malloc gives each thread an arena of its own, and the
 * MDS's cache objects were made by whichever reader thread ran the
 * request, between the short-lived buffers of that request.  When the
 * cache evicted them, the holes they left were in four arenas and between
 * live buffers: 150 MB of free heap stayed resident for 85 MB in use
 * (malloc_stats at 600,000 files under a 64 MB limit), so the process
 * never came near its cache limit.  Here every object of a class comes from
 * the class's own 1 MiB chunks (mmap), and a freed one is the next one
 * handed out, whatever thread frees or asks: the chunks are as many as the
 * cache's peak needs, and the cache is bounded.  Chunks are not given back
 * (the kernel's kmem caches without a shrinker): a cache that shrinks for
 * good keeps its peak.
 *
 * Classes are multiples of 16 bytes up to SLAB_MAX; anything bigger goes to
 * malloc, and so does everything under AddressSanitizer (a free list would
 * hide a use after free from it; LeakSanitizer then sees the cache's
 * objects too).  Under valgrind the chunks are mmap'ed memory, not heap: a
 * cache object never given back is not reported as a leak there.  The caller passes the size again to slab_free (the objects carry
 * no header).  Thread-safe: one mutex per class (a leaf lock).
 */
#ifndef LOLIGO_COMMON_SLAB_H
#define LOLIGO_COMMON_SLAB_H

#include <stddef.h>
#include <stdint.h>

#define SLAB_MAX 512

/** slab_size - the bytes @p, from slab_zalloc(@size), really takes: its class's size, or malloc's (0 for NULL). */
size_t slab_size(const void *p, size_t size);
/** slab_zalloc - a zeroed object of @size bytes, or NULL. */
void *slab_zalloc(size_t size);
/** slab_free - give back @p, allocated by slab_zalloc(@size) (NULL: nothing). */
void slab_free(void *p, size_t size);
/** slab_stats - bytes the classes hold in chunks, and of it in objects handed out. */
void slab_stats(uint64_t *chunk_bytes, uint64_t *used_bytes);

#endif
