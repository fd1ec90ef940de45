/*
 * xarray.c - a radix tree keyed by u64, RCU readers, one writer lock.
 *
 * Shape.  Every node has 64 slots and a shift (0, 6, ..., 60): the slot of
 * key k in a node is (k >> shift) & 63.  Slots of a shift-0 node (a leaf)
 * hold entries; slots of other nodes hold children whose shift is 6 less.
 * The root's shift says how many keys the tree covers: a root of shift s
 * holds keys below 2^(s+6) (all keys when s is 60).  So no pointer tagging
 * is needed: the level alone says whether a slot holds a node or an entry.
 *
 * Writers (xa_store, xa_erase) hold xa->lock and publish every change with
 * rcu_assign_pointer() after the new node is fully initialised:
 *  - growing: a new root whose slot 0 is the old root is published in one
 *    store; a reader that already loaded the old root sees a smaller but
 *    consistent tree, and keys outside it were absent then anyway.
 *  - a node emptied by erase is unlinked from its parent, then freed with
 *    call_rcu(); a reader still inside it sees only NULL slots.
 *  - shrinking: while the root has a single child in slot 0, that child
 *    becomes the root and the old root goes to call_rcu() (it still points
 *    at the child, so a reader on it still finds everything).
 * A node's shift never changes after it is published, so readers
 * (xa_load, xa_find) only need a dependent load of each slot and the root.
 *
 * Each node also keeps a bitmap of its non-NULL slots, so that xa_find
 * jumps to the next occupied slot (ctz) instead of scanning 64: keys that
 * are hashes (the MDS's readdir cookies) leave every level of the tree
 * sparse, and a READDIR of 1024 entries from the root each time was mostly
 * slot scanning (63 % of the MDS's CPU in mds_bench --storm).  A slot is
 * set before its bit and its bit cleared before the slot, both under
 * xa->lock; a reader (acquire on the bitmap) that sees a bit finds the slot
 * set or, if an erase raced it, NULL and skips it; an entry inserted
 * during the walk may be missed, as with any RCU reader that started
 * before it.
 *
 * The loads are __atomic consume loads rather than urcu's rcu_dereference,
 * which without _LGPL_SOURCE is a function call per slot.
 *
 * Lock order: xa->lock is a leaf lock; nothing is called with it held
 * except malloc and call_rcu().
 */
#include "common/xarray.h"

#include <errno.h>
#include <stdlib.h>

#include "common/rcu.h"

#define XA_BITS 6
#define XA_SLOTS (1u << XA_BITS)
#define XA_MASK (XA_SLOTS - 1)
#define XA_MAX_SHIFT 60

struct xa_node {
	uint64_t bitmap;		/* occupied slots; written under xa->lock, read atomically */
	unsigned int shift;		/* immutable once published */
	unsigned int count;		/* non-NULL slots; protected by xa->lock */
	unsigned int offset;		/* our slot in parent; protected by xa->lock */
	struct xa_node *parent;		/* protected by xa->lock; NULL for the root */
	struct rcu_head rcu;
	void *slots[XA_SLOTS];		/* RCU-protected */
};

static struct xa_node *node_alloc(unsigned int shift)
{
	struct xa_node *n = calloc(1, sizeof(*n));

	if (n)
		n->shift = shift;
	return n;
}

static void node_free_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct xa_node, rcu));
}

static void node_retire(struct xa_node *n)
{
	call_rcu(&n->rcu, node_free_rcu);
}

/* true when key @index is inside the range of a node of @shift at the top */
static inline bool covers(unsigned int shift, uint64_t index)
{
	return shift + XA_BITS >= 64 || (index >> (shift + XA_BITS)) == 0;
}

/* a dependent load of an RCU-published pointer, inline */
#define xa_deref(p) __atomic_load_n(&(p), __ATOMIC_CONSUME)

/* Publish @p in slot @off of @n (NULL: clear it).  Context: xa->lock held. */
static inline void slot_set(struct xa_node *n, unsigned int off, void *p)
{
	if (p) {
		rcu_assign_pointer(n->slots[off], p);
		__atomic_fetch_or(&n->bitmap, 1ull << off, __ATOMIC_RELEASE);
	} else {
		__atomic_fetch_and(&n->bitmap, ~(1ull << off), __ATOMIC_RELEASE);
		rcu_assign_pointer(n->slots[off], NULL);
	}
}

static inline unsigned int slot_of(const struct xa_node *n, uint64_t index)
{
	return (unsigned int)(index >> n->shift) & XA_MASK;
}

void xa_init(struct xarray *xa)
{
	xa->root = NULL;
	xa->height = 0;
	xa->count = 0;
	pthread_mutex_init(&xa->lock, NULL);
}

static void destroy_node(struct xa_node *n)
{
	unsigned int i;

	if (n->shift) {
		for (i = 0; i < XA_SLOTS; i++)
			if (n->slots[i])
				destroy_node(n->slots[i]);
	}
	free(n);
}

void xa_destroy(struct xarray *xa)
{
	if (xa->root)
		destroy_node(xa->root);
	xa->root = NULL;
	xa->height = 0;
	xa->count = 0;
	pthread_mutex_destroy(&xa->lock);
}

void *xa_load(struct xarray *xa, uint64_t index)
{
	struct xa_node *n = xa_deref(xa->root);

	if (!n || !covers(n->shift, index))
		return NULL;
	while (n->shift) {
		n = xa_deref(n->slots[slot_of(n, index)]);
		if (!n)
			return NULL;
	}
	return xa_deref(n->slots[index & XA_MASK]);
}

/*
 * Make the root cover @index, adding levels on top.
 * Context: xa->lock held.  Return: 0 or -ENOMEM (tree unchanged).
 */
static int grow_locked(struct xarray *xa, uint64_t index)
{
	struct xa_node *root = xa->root, *n;
	unsigned int shift = 0;

	if (!root) {
		while (!covers(shift, index))
			shift += XA_BITS;
		n = node_alloc(shift);
		if (!n)
			return -ENOMEM;
		xa->height = shift / XA_BITS + 1;
		rcu_assign_pointer(xa->root, n);
		return 0;
	}
	while (!covers(root->shift, index)) {
		n = node_alloc(root->shift + XA_BITS);
		if (!n)
			return -ENOMEM;	/* the levels added so far are harmless */
		n->slots[0] = root;
		n->bitmap = 1;          /* not yet published: plain stores */
		n->count = 1;
		root->parent = n;
		root->offset = 0;
		xa->height++;
		rcu_assign_pointer(xa->root, n);
		root = n;
	}
	return 0;
}

/*
 * Drop levels whose root has a single child in slot 0, and free nodes left
 * empty.  Context: xa->lock held.
 */
static void shrink_locked(struct xarray *xa)
{
	struct xa_node *root = xa->root, *child;

	while (root && root->shift && root->count == 1 && root->slots[0]) {
		child = root->slots[0];
		child->parent = NULL;
		rcu_assign_pointer(xa->root, child);
		xa->height--;
		node_retire(root);
		root = child;
	}
	if (root && root->count == 0) {
		rcu_assign_pointer(xa->root, NULL);
		xa->height = 0;
		node_retire(root);
	}
}

/* Context: xa->lock held. */
static int store_locked(struct xarray *xa, uint64_t index, void *entry, bool replace)
{
	struct xa_node *n, *child;
	unsigned int off;
	int r;

	r = grow_locked(xa, index);
	if (r)
		goto out_shrink;
	n = xa->root;
	while (n->shift) {
		off = slot_of(n, index);
		child = n->slots[off];
		if (!child) {
			child = node_alloc(n->shift - XA_BITS);
			if (!child) {
				r = -ENOMEM;
				goto out_shrink;
			}
			child->parent = n;
			child->offset = off;
			slot_set(n, off, child);
			n->count++;
		}
		n = child;
	}
	off = index & XA_MASK;
	if (n->slots[off]) {
		if (!replace) {
			r = -EEXIST;
			goto out_shrink;
		}
	} else {
		n->count++;
		xa->count++;
	}
	slot_set(n, off, entry);
	return 0;

out_shrink:
	/* undo empty nodes made on the way (a failed alloc or -EEXIST) */
	if (r == -ENOMEM) {
		n = xa->root;
		while (n && n->shift) {
			child = n->slots[slot_of(n, index)];
			if (!child)
				break;
			n = child;
		}
		while (n && n->count == 0 && n->parent) {
			struct xa_node *p = n->parent;

			slot_set(p, n->offset, NULL);
			p->count--;
			node_retire(n);
			n = p;
		}
	}
	shrink_locked(xa);
	return r;
}

int xa_store(struct xarray *xa, uint64_t index, void *entry)
{
	int r;

	if (!entry)
		return -EINVAL;
	pthread_mutex_lock(&xa->lock);
	r = store_locked(xa, index, entry, true);
	pthread_mutex_unlock(&xa->lock);
	return r;
}

int xa_insert(struct xarray *xa, uint64_t index, void *entry)
{
	int r;

	if (!entry)
		return -EINVAL;
	pthread_mutex_lock(&xa->lock);
	r = store_locked(xa, index, entry, false);
	pthread_mutex_unlock(&xa->lock);
	return r;
}

void *xa_erase(struct xarray *xa, uint64_t index)
{
	struct xa_node *n, *p;
	void *old = NULL;
	unsigned int off;

	pthread_mutex_lock(&xa->lock);
	n = xa->root;
	if (!n || !covers(n->shift, index))
		goto out_unlock;
	while (n->shift) {
		n = n->slots[slot_of(n, index)];
		if (!n)
			goto out_unlock;
	}
	off = index & XA_MASK;
	old = n->slots[off];
	if (!old)
		goto out_unlock;
	slot_set(n, off, NULL);
	n->count--;
	xa->count--;
	/* unlink and free the nodes this left empty, bottom up */
	while (n->count == 0 && n->parent) {
		p = n->parent;
		slot_set(p, n->offset, NULL);
		p->count--;
		node_retire(n);
		n = p;
	}
	shrink_locked(xa);
out_unlock:
	pthread_mutex_unlock(&xa->lock);
	return old;
}

/*
 * First entry at or after @index inside node @n, whose keys start at @base.
 * @index is >= @base and inside @n's range.  Context: RCU read side.
 */
static void *find_in(struct xa_node *n, uint64_t base, uint64_t index, uint64_t *found)
{
	unsigned int off = slot_of(n, index);
	unsigned int last = n->shift + XA_BITS > 64 ? (1u << (64 - n->shift)) - 1 : XA_MASK;
	uint64_t bm = __atomic_load_n(&n->bitmap, __ATOMIC_ACQUIRE) & (~0ull << off);
	void *p, *e;

	if (last < XA_MASK)
		bm &= (2ull << last) - 1;
	for (; bm; bm &= bm - 1) {
		uint64_t slot_base;

		off = (unsigned int)__builtin_ctzll(bm);
		slot_base = base + ((uint64_t)off << n->shift);
		p = xa_deref(n->slots[off]);
		if (!p)
			continue;
		if (!n->shift) {
			*found = slot_base;
			return p;
		}
		/* inside the first slot, start at @index; in later ones at their start */
		e = find_in(p, slot_base, index > slot_base ? index : slot_base, found);
		if (e)
			return e;
	}
	return NULL;
}

void *xa_find(struct xarray *xa, uint64_t *index)
{
	struct xa_node *root = xa_deref(xa->root);
	uint64_t found = 0;
	void *e;

	if (!root || !covers(root->shift, *index))
		return NULL;
	e = find_in(root, 0, *index, &found);
	if (e)
		*index = found;
	return e;
}

bool xa_empty(struct xarray *xa)
{
	return CMM_LOAD_SHARED(xa->root) == NULL;
}

uint64_t xa_count(struct xarray *xa)
{
	uint64_t n;

	pthread_mutex_lock(&xa->lock);
	n = xa->count;
	pthread_mutex_unlock(&xa->lock);
	return n;
}
