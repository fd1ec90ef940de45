/*
 * xarray.h - a radix tree keyed by u64 with lock-free RCU lookups.
 *
 * Modelled on the Linux xarray as the ceph client uses it for its request
 * map: readers (xa_load, xa_find) run inside rcu_read_lock() and take no
 * lock; writers (xa_store, xa_erase) serialise on the tree's own internal
 * mutex.  Interior nodes have 64 slots (6 bits of the key per level); the
 * tree grows in height as larger keys arrive and nodes emptied by erase are
 * freed with call_rcu(), so a concurrent reader never touches freed memory.
 * Iteration is in key order, which for tids is submission order.
 *
 * Entries are non-NULL pointers; storing NULL is erase.  The tree does not
 * own entries: freeing them (after a grace period if readers may hold them)
 * is the caller's business.
 */
#ifndef LOLIGO_COMMON_XARRAY_H
#define LOLIGO_COMMON_XARRAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct xa_node;

struct xarray {
	struct xa_node *root;       /* RCU-protected; NULL when empty */
	unsigned int height;        /* protected by lock; readers use root->shift */
	pthread_mutex_t lock;       /* serialises writers */
	uint64_t count;             /* protected by lock */
};

void xa_init(struct xarray *xa);
/** xa_destroy - free every node (not the entries).  No concurrent users. */
void xa_destroy(struct xarray *xa);

/**
 * xa_load - entry at @index or NULL.
 * Context: caller holds rcu_read_lock(); the entry stays valid only while
 * the caller's own refcounting or the read section says so.
 */
void *xa_load(struct xarray *xa, uint64_t index);

/**
 * xa_store - set @index to @entry (non-NULL), replacing any old entry.
 * Takes the tree lock; may allocate.  Return: 0, -ENOMEM, -EINVAL (NULL entry).
 */
int xa_store(struct xarray *xa, uint64_t index, void *entry);

/**
 * xa_insert - like xa_store but fails with -EEXIST if @index is occupied.
 */
int xa_insert(struct xarray *xa, uint64_t index, void *entry);

/** xa_erase - remove @index; return the old entry or NULL.  Takes the tree lock. */
void *xa_erase(struct xarray *xa, uint64_t index);

/**
 * xa_find - first entry with key >= *@index; sets *@index to its key.
 * Return: the entry, or NULL if there is none.
 * Context: caller holds rcu_read_lock() (or the tree lock).
 */
void *xa_find(struct xarray *xa, uint64_t *index);

/** xa_empty - true when the tree has no entry (racy hint for readers). */
bool xa_empty(struct xarray *xa);
/** xa_count - number of entries (takes the tree lock). */
uint64_t xa_count(struct xarray *xa);

/*
 * xa_for_each(xa, idx, entry) - iterate in key order.
 * Context: rcu_read_lock() held across the loop.  Entries inserted or erased
 * concurrently may or may not be seen; none is seen twice.
 */
#define xa_for_each(xa, idx, entry)                                   \
	for ((idx) = 0, (entry) = xa_find((xa), &(idx)); (entry);     \
	     (entry) = ((idx) == UINT64_MAX ? NULL :                  \
			((idx)++, xa_find((xa), &(idx)))))

#endif
