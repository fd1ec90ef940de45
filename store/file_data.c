/*
 * file_data.c - how a file's data lies in a data pool (DESIGN.md section 4),
 * and removing it at a cost proportional to what exists.
 *
 * A file's bytes live in objects "<ino hex>.<objno %08x>" of object_size
 * bytes, striped over them as its layout says (store_file_map, below);
 * objects never written do not exist (holes).  A file's logical size
 * says nothing about how many objects exist: a 1 TiB file with one byte at
 * its end has one object.  Removing "every object the size covers" costs
 * 262,144 deletes there, and 4.4e12 for a size of 2^64-1.  RADOS cannot
 * list a pool by name prefix cheaply, so each file keeps an index of its
 * objects in the filesystem's first data pool (the one that holds the data
 * of files with the default layout; a file whose layout names another
 * pool has its data objects there and its index here, so that a pool
 * without omap, an erasure-coded RADOS pool, can hold file data):
 *
 *   "<ino hex>.objs"  omap: one key per data object that may exist,
 *                     "%016x" of its object number (sorted = numeric order),
 *                     empty value.
 *
 * The invariant: every data object that exists has its key.  Writers set the
 * key (an idempotent omap set) and wait for it before the first write to an
 * object (the client remembers which keys it has set, so that costs one
 * extra op per new object, not per write); trimmers remove an object before
 * its key.  A crash between the two steps leaves a key without an object,
 * which is harmless; never an object without a key.
 *
 * Pools made before the index existed hold files without one.  A pool whose
 * files all keep the invariant carries a marker ("loligo.data_format", omap
 * key "index"), written when the pool is made for a new filesystem; in an
 * unmarked pool a missing index proves nothing, and a trim falls back to
 * naming every object the old size covers, a bound the caller keeps finite
 * (min(size, max_file_size)).  New writers keep the index there too.
 *
 * store_file_trim is a cursor over one trim (truncate to a size, or purge to
 * nothing): each step lists at most @max keys at or past the cut, removes
 * those objects (the one holding the new end is cut instead) with at most
 * @inflight in flight, and then removes their keys in one op.  A step is
 * bounded work, so a caller may stop between steps (shutdown) and start
 * again later: the index holds exactly what is left.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/store.h"

#define MARKER_OID "loligo.data_format"
#define MARKER_KEY "index"

void store_file_oid(char *buf, size_t len, uint64_t ino, uint64_t objno)
{
	snprintf(buf, len, "%" PRIx64 ".%08" PRIx64, ino, objno);
}

void store_file_index_oid(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%" PRIx64 ".objs", ino);
}

void store_file_index_key(char *buf, size_t len, uint64_t objno)
{
	snprintf(buf, len, "%016" PRIx64, objno);
}

void store_file_index_note(struct store_op *op, uint64_t objno)
{
	char key[32];

	store_file_index_key(key, sizeof(key), objno);
	store_op_omap_set(op, key, NULL, 0);
}

int store_file_pool_indexed(struct store_pool *p)
{
	void *v = NULL;
	size_t n = 0;
	int r = store_omap_get(p, MARKER_OID, MARKER_KEY, &v, &n);

	free(v);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? r : 1;
}

int store_file_pool_mark_indexed(struct store_pool *p)
{
	struct store_op *op = store_op_new();

	if (!op)
		return -ENOMEM;
	store_op_omap_set(op, MARKER_KEY, "1", 1);
	return store_op_exec(p, MARKER_OID, op);
}

/* ---- the layout ----------------------------------------------------------- */

void store_file_layout_init(struct store_file_layout *ly, uint32_t object_size, uint32_t stripe_unit,
			    uint32_t stripe_count)
{
	ly->object_size = object_size ? object_size : (4u << 20);
	ly->pool_id = 0;
	ly->pool = NULL;
	ly->stripe_unit = stripe_unit;
	ly->stripe_count = stripe_count;
	if (!stripe_unit || !stripe_count || stripe_unit > ly->object_size || ly->object_size % stripe_unit) {
		ly->stripe_unit = ly->object_size;
		ly->stripe_count = 1;
	}
}

bool store_file_layout_plain(const struct store_file_layout *ly)
{
	return ly->stripe_count == 1 && ly->stripe_unit == ly->object_size;
}

uint64_t store_file_map(const struct store_file_layout *ly, uint64_t off, uint64_t *objno, uint64_t *objoff)
{
	uint64_t su = ly->stripe_unit, sc = ly->stripe_count, spo = ly->object_size / su;
	uint64_t blockno = off / su, stripeno = blockno / sc, stripepos = blockno % sc;

	*objno = stripeno / spo * sc + stripepos;
	*objoff = stripeno % spo * su + off % su;
	return su - off % su;
}

uint64_t store_file_unmap(const struct store_file_layout *ly, uint64_t objno, uint64_t objoff)
{
	uint64_t su = ly->stripe_unit, sc = ly->stripe_count, spo = ly->object_size / su;
	uint64_t stripeno = objno / sc * spo + objoff / su;

	return (stripeno * sc + objno % sc) * su + objoff % su;
}

uint64_t store_file_obj_keep(const struct store_file_layout *ly, uint64_t objno, uint64_t size)
{
	uint64_t su = ly->stripe_unit, sc = ly->stripe_count, spo = ly->object_size / su;
	uint64_t nb = size / su, rem = size % su;
	uint64_t base = objno / sc * spo * sc + objno % sc;   /* block number of the object's first unit */
	uint64_t full, d;

	if (nb < base)
		return 0;
	d = nb - base;
	/* units k (block base + k * sc) wholly below the size: k * sc < d */
	full = (d + sc - 1) / sc;
	if (full >= spo)
		return ly->object_size;
	/* the unit holding the size itself keeps its first rem bytes */
	return full * su + (full * sc == d ? rem : 0);
}

uint64_t store_file_obj_first(const struct store_file_layout *ly, uint64_t size)
{
	uint64_t objno, objoff;

	store_file_map(ly, size, &objno, &objoff);
	return objno / ly->stripe_count * ly->stripe_count;
}

uint64_t store_file_obj_end(const struct store_file_layout *ly, uint64_t size)
{
	uint64_t objno, objoff;

	if (!size)
		return 0;
	store_file_map(ly, size - 1, &objno, &objoff);
	if (ly->stripe_count == 1)
		return objno + 1;
	return (objno / ly->stripe_count + 1) * ly->stripe_count;
}

/* ---- trimming ------------------------------------------------------------ */

/* ops of one step in flight */
struct group {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned int pending;   /* protected by m */
	int err;                /* first error other than -ENOENT; protected by m */
	unsigned int removed;   /* protected by m */
};

struct piece {
	struct group *g;
	bool remove;            /* counts as removed when it succeeds */
};

static void piece_done(int r, void *arg)
{
	struct piece *pc = arg;
	struct group *g = pc->g;

	pthread_mutex_lock(&g->m);
	if (r < 0 && r != -ENOENT && !g->err)
		g->err = r;
	if (r == 0 && pc->remove)
		g->removed++;
	g->pending--;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->m);
	free(pc);
}

static void group_wait(struct group *g, unsigned int max)
{
	pthread_mutex_lock(&g->m);
	while (g->pending > max)
		pthread_cond_wait(&g->cv, &g->m);
	pthread_mutex_unlock(&g->m);
}

static void group_fail(struct group *g, int r)
{
	pthread_mutex_lock(&g->m);
	if (!g->err)
		g->err = r;
	pthread_mutex_unlock(&g->m);
}

/*
 * remove object @objno of @t's file, or cut it when it holds bytes below
 * the new end (@keep of them, store_file_obj_keep; never the whole object)
 */
static void trim_one(struct store_pool *p, struct store_file_trim *t, struct group *g, uint64_t objno,
		     uint64_t keep, unsigned int inflight)
{
	struct store_op *op = store_op_new();
	struct piece *pc = op ? calloc(1, sizeof(*pc)) : NULL;
	char oid[64];
	int r;

	if (!pc) {
		store_op_free(op);
		group_fail(g, -ENOMEM);
		return;
	}
	pc->g = g;
	if (keep) {
		store_op_assert_exists(op);   /* never create an object just to cut it */
		store_op_truncate(op, keep);
	} else {
		store_op_remove(op);
		pc->remove = true;
	}
	store_file_oid(oid, sizeof(oid), t->ino, objno);
	pthread_mutex_lock(&g->m);
	g->pending++;
	pthread_mutex_unlock(&g->m);
	t->ops++;
	r = store_op_submit(t->data ? t->data : p, oid, op, piece_done, pc);
	if (r < 0) {
		pc->remove = false;
		piece_done(r, pc);
	}
	group_wait(g, inflight ? inflight - 1 : 0);
}

void store_file_trim_init(struct store_file_trim *t, uint64_t ino, const struct store_file_layout *ly,
			  uint64_t new_size, uint64_t old_size, bool indexed)
{
	memset(t, 0, sizeof(*t));
	t->ino = ino;
	store_file_layout_init(&t->ly, ly->object_size, ly->stripe_unit, ly->stripe_count);
	t->size = new_size;
	t->indexed = indexed;
	/* the object set holding the new end: each of its objects may keep some */
	t->next = store_file_obj_first(&t->ly, new_size);
	/* without an index: every object the old size covers, and one object
	 * set past it (data a client wrote but had not reported yet) */
	t->end = old_size > new_size ? store_file_obj_end(&t->ly, old_size) + t->ly.stripe_count : t->next;
}

/* the index lists what is left: remove the objects of up to @max keys */
static int step_indexed(struct store_pool *p, struct store_file_trim *t, struct group *g, unsigned int max,
			unsigned int inflight)
{
	char ioid[64], after[32], key[32];
	struct store_kv *kvs = NULL;
	uint64_t *objs = NULL;
	size_t n = 0, i, nrm = 0;
	uint64_t keep;
	bool more = false;
	int r;

	store_file_index_oid(ioid, sizeof(ioid), t->ino);
	if (t->next)
		store_file_index_key(after, sizeof(after), t->next - 1);
	r = store_omap_list(p, ioid, t->next ? after : NULL, NULL, max, &kvs, &n, &more);
	if (r == -ENOENT)
		return 0;   /* no index: no object was ever written */
	if (r < 0)
		return r;
	objs = calloc(n ? n : 1, sizeof(*objs));
	if (!objs) {
		store_kv_free(kvs, n);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		char *endp;
		uint64_t o = strtoull(kvs[i].key, &endp, 16);

		if (*endp || strlen(kvs[i].key) != 16) {
			derr(STORE, "index %s: bad key '%s' skipped", ioid, kvs[i].key);
			continue;
		}
		if (o < t->next)
			continue;
		keep = store_file_obj_keep(&t->ly, o, t->size);
		if (keep < t->ly.object_size)
			trim_one(p, t, g, o, keep, inflight);
		if (!keep)
			objs[nrm++] = o;
		t->next = o + 1;
	}
	store_kv_free(kvs, n);
	group_wait(g, 0);
	r = g->err;
	if (r == 0 && nrm) {
		/* the objects are gone: now their keys (one op) */
		struct store_op *op = store_op_new();

		if (!op) {
			r = -ENOMEM;
		} else {
			for (i = 0; i < nrm; i++) {
				store_file_index_key(key, sizeof(key), objs[i]);
				store_op_omap_rm(op, key);
			}
			t->ops++;
			r = store_op_exec(p, ioid, op);
			if (r == -ENOENT)
				r = 0;
		}
	}
	free(objs);
	if (r < 0)
		return r;
	return more ? 1 : 0;
}

/* no index to trust: the next @max object numbers below t->end */
static int step_fallback(struct store_pool *p, struct store_file_trim *t, struct group *g, unsigned int max,
			 unsigned int inflight)
{
	uint64_t stop = t->next + max;

	if (stop > t->end || stop < t->next)
		stop = t->end;
	for (; t->next < stop; t->next++) {
		uint64_t keep = store_file_obj_keep(&t->ly, t->next, t->size);

		if (keep < t->ly.object_size)
			trim_one(p, t, g, t->next, keep, inflight);
	}
	group_wait(g, 0);
	if (g->err)
		return g->err;
	if (t->next < t->end)
		return 1;
	/* a newer writer may have indexed some of them: drop those keys too */
	char ioid[64], key[32];
	struct store_op *op = store_op_new();
	/* past every object that may keep bytes (a key too many is harmless) */
	uint64_t first = store_file_obj_end(&t->ly, t->size);
	int r;

	if (!op)
		return -ENOMEM;
	store_file_index_oid(ioid, sizeof(ioid), t->ino);
	store_file_index_key(key, sizeof(key), first);
	store_op_assert_exists(op);
	store_op_omap_rm_range(op, key, NULL);
	t->ops++;
	r = store_op_exec(p, ioid, op);
	return r == -ENOENT ? 0 : r;
}

int store_file_trim_step(struct store_pool *p, struct store_file_trim *t, unsigned int max, unsigned int inflight)
{
	struct group g = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	int r;

	if (t->done)
		return 0;
	if (!max)
		max = 1;
	if (!inflight)
		inflight = 1;
	r = t->indexed ? step_indexed(p, t, &g, max, inflight) : step_fallback(p, t, &g, max, inflight);
	t->removed += g.removed;
	pthread_mutex_destroy(&g.m);
	pthread_cond_destroy(&g.cv);
	if (r != 0)
		return r;
	if (t->size == 0) {
		/* a purge: the (now empty) index goes too */
		char ioid[64];
		struct store_op *op = store_op_new();

		if (!op)
			return -ENOMEM;
		store_file_index_oid(ioid, sizeof(ioid), t->ino);
		store_op_remove(op);
		t->ops++;
		r = store_op_exec(p, ioid, op);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	t->done = true;
	return 0;
}
