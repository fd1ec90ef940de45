/*
 * slab.c - size classes for long-lived small objects (see slab.h).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/slab.h"

#define SLAB_CHUNK (1u << 20)
#define NCLASSES (SLAB_MAX / 16)

/*
 * Under AddressSanitizer (LOLIGO_SANITIZE) every object is malloc's: a
 * class's free list would hide a use after free of an inode or a dentry
 * from it, which is what that build is for.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_PASSTHROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_PASSTHROUGH 1
#endif
#endif
#ifndef SLAB_PASSTHROUGH
#define SLAB_PASSTHROUGH 0
#endif

struct slab_class {
	pthread_mutex_t lock;
	void *free;               /* free objects, linked through their first word; lock */
	char *next, *end;         /* the uncarved rest of the newest chunk; lock */
};

static struct slab_class classes[NCLASSES] = {
	[0 ... NCLASSES - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};
static _Atomic uint64_t chunk_bytes, used_bytes;

static size_t class_of(size_t size)
{
	return (size + 15) / 16 - 1;
}

size_t slab_size(const void *p, size_t size)
{
	if (!p)
		return 0;
	if (SLAB_PASSTHROUGH || !size || size > SLAB_MAX)
		return malloc_usable_size((void *)p) + sizeof(size_t);   /* malloc's, and its header word */
	return (class_of(size) + 1) * 16;
}

void *slab_zalloc(size_t size)
{
	struct slab_class *c;
	void *p;

	if (SLAB_PASSTHROUGH || !size || size > SLAB_MAX)
		return calloc(1, size ? size : 1);
	c = &classes[class_of(size)];
	size = (class_of(size) + 1) * 16;
	pthread_mutex_lock(&c->lock);
	p = c->free;
	if (p) {
		c->free = *(void **)p;
	} else {
		if (c->next + size > c->end) {
			char *ch = mmap(NULL, SLAB_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (ch == MAP_FAILED) {
				pthread_mutex_unlock(&c->lock);
				return NULL;
			}
			c->next = ch;
			c->end = ch + SLAB_CHUNK;
			chunk_bytes += SLAB_CHUNK;
		}
		p = c->next;
		c->next += size;
	}
	pthread_mutex_unlock(&c->lock);
	used_bytes += size;
	memset(p, 0, size);
	return p;
}

void slab_free(void *p, size_t size)
{
	struct slab_class *c;

	if (!p)
		return;
	if (SLAB_PASSTHROUGH || !size || size > SLAB_MAX) {
		free(p);
		return;
	}
	c = &classes[class_of(size)];
	used_bytes -= (class_of(size) + 1) * 16;
	pthread_mutex_lock(&c->lock);
	*(void **)p = c->free;
	c->free = p;
	pthread_mutex_unlock(&c->lock);
}

void slab_stats(uint64_t *chunks, uint64_t *used)
{
	*chunks = chunk_bytes;
	*used = used_bytes;
}
