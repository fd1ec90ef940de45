/*
 * objio.c - file data in the object store (DESIGN.md section 4).
 *
 * A file's bytes are striped over objects "<ino hex>.<objno %08x>" of
 * object_size bytes each in the data pool, as its layout says: stripe units
 * round-robin over stripe_count objects (store_file_map, the one place that
 * turns a file offset into an object and an offset in it; the plain layout
 * puts byte B at offset B % object_size of object B / object_size).  The
 * data path works in stripe units: a unit is contiguous in one object, and
 * the units of one stripe go to stripe_count objects, so a large write or
 * read keeps that many objects (OSDs) busy at once.  Objects that were
 * never written do not exist and read as zeros, as do the parts of an
 * object past its end (sparse files cost nothing).
 *
 * Every object that exists is listed in the file's object index
 * "<ino hex>.objs" (store/file_data.c): before the first write to an object
 * its key is set (lc_obj_index; the inode remembers which keys it has set,
 * so that is one extra op per new object), and truncation lists the index
 * instead of naming every object the size covers.
 *
 * A file range touching several objects is split into one store operation
 * per object, all in flight at once (bounded by client_max_io_inflight), and
 * the caller waits for all of them: a 20 MiB read is five parallel object
 * reads, not five round trips.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/data_int.h"
#include "common/config.h"
#include "common/rcu.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

void lc_obj_name(char *buf, size_t len, uint64_t ino, uint64_t objno)
{
	store_file_oid(buf, len, ino, objno);
}

/* ---- data pools ----------------------------------------------------------- */

/*
 * A file's data objects are in the pool its layout names (fs add_data_pool);
 * its object index always in the first pool, c->data, which must keep omap
 * (an erasure-coded RADOS pool cannot: it may hold data only).  Pools other
 * than the first are opened at their first use and kept for the mount.
 */
int lc_layout_resolve(struct lclient *c, uint64_t ino, struct store_file_layout *ly)
{
	struct store_pool *p = NULL;
	char name[256];
	int r;

	if (ly->pool)
		return 0;
	if (!ly->pool_id) {
		ly->pool = c->data;
		return 0;
	}
	if ((ly->pool = lc_pool_peek(c, ly->pool_id)))
		return 0;
	if (!c->data_ops.pool_name || !c->store)
		return -EIO;
	/* (a file's pool changes only while it is empty: the name is the id's) */
	r = c->data_ops.pool_name(c, ino, name, sizeof(name));
	if (r < 0) {
		derr(CLIENT, "data pool %" PRIu32 " of inode %" PRIx64 ": cannot learn its name: %s", ly->pool_id, ino,
		     strerror(-r));
		return r == -ENODATA ? -EIO : r;
	}
	r = store_pool_open(c->store, name, NULL, &p);
	if (r < 0) {
		derr(CLIENT, "cannot open data pool %s (id %" PRIu32 "): %s", name, ly->pool_id, strerror(-r));
		return r == -ENOENT ? -EIO : r;
	}
	pthread_mutex_lock(&c->pools_lock);
	for (size_t i = 0; i < c->npools; i++)
		if (c->pools[i].id == ly->pool_id) {
			ly->pool = c->pools[i].p;   /* another thread was quicker */
			break;
		}
	if (!ly->pool) {
		struct lc_pool *v = realloc(c->pools, (c->npools + 1) * sizeof(*v));

		if (v) {
			c->pools = v;
			v[c->npools].id = ly->pool_id;
			v[c->npools].p = p;
			c->npools++;
			ly->pool = p;
			p = NULL;
		}
	}
	pthread_mutex_unlock(&c->pools_lock);
	if (p)
		store_pool_close(p);
	if (!ly->pool)
		return -ENOMEM;
	dinfo(CLIENT, "data pool %s (id %" PRIu32 ") open", name, ly->pool_id);
	return 0;
}

/* the pool of @ly's data objects (lc_layout_resolve'd), or NULL */
static struct store_pool *pool_of(struct lclient *c, const struct store_file_layout *ly)
{
	return ly->pool ? ly->pool : ly->pool_id ? NULL : c->data;
}

/* ---- what a file holds: st_blocks ---------------------------------------- */

#define LC_ALLOC_STAT_MAX 32        /* objects stat'ed one by one */
#define LC_ALLOC_LIST_MAX 65536     /* objects counted through the index */

static void alloc_key_of(const struct lc_inode *in, uint64_t key[3])
{
	key[0] = in->mi.size;
	key[1] = in->mi.mtime.sec * 1000000000ull + in->mi.mtime.nsec;
	key[2] = in->mi.change;
}

bool lc_obj_alloc_stale_locked(struct lclient *c, const struct lc_inode *in)
{
	uint64_t key[3];

	/* the MDS keeps what is stored (blocks.c): nothing to count here */
	if (in->mi.blocks != MDSP_BLOCKS_UNKNOWN || !c->data_indexed || !c->data || !S_ISREG(in->mi.mode) ||
	    !in->mi.size || in->dirty_meta || in->dirty || in->flushing)
		return false;
	alloc_key_of(in, key);
	return !in->blk || !in->blk->alloc_known || memcmp(key, in->blk->alloc_key, sizeof(key));
}

void lc_obj_allocated(struct lclient *c, struct lc_inode *in)
{
	struct store_kv *kv = NULL;
	uint64_t key[3], total = 0, nobj = 0, ino = in->ino;
	struct store_file_layout ly;
	uint32_t osize;
	char oid[64], after[32] = "";
	bool more = true, exact = true, have_key;
	size_t n, i;
	int r = 0;

	if (!c->data_indexed || !c->data)
		return;
	pthread_mutex_lock(&in->lock);
	alloc_key_of(in, key);
	have_key = in->blk && in->blk->alloc_known && !memcmp(key, in->blk->alloc_key, sizeof(key));
	lc_mi_layout(c, &in->mi, &ly);
	osize = ly.object_size;
	if (!ly.pool)
		have_key = true;   /* not open here: the size stands (the reads open it) */
	if (have_key || in->mi.blocks != MDSP_BLOCKS_UNKNOWN || !S_ISREG(in->mi.mode) || in->dirty_meta ||
	    in->dirty || in->flushing || !key[0] || !osize) {
		pthread_mutex_unlock(&in->lock);
		return;
	}
	pthread_mutex_unlock(&in->lock);

	store_file_index_oid(oid, sizeof(oid), ino);
	while (more && nobj < LC_ALLOC_LIST_MAX) {
		r = store_omap_list(c->data, oid, *after ? after : NULL, NULL, 1024, &kv, &n, &more);
		if (r == -ENOENT) {
			r = 0;        /* no object ever written */
			break;
		}
		if (r)
			break;
		for (i = 0; i < n; i++, nobj++) {
			uint64_t objno = strtoull(kv[i].key, NULL, 16);
			struct store_stat st;
			char name[64];

			if (nobj < LC_ALLOC_STAT_MAX) {
				store_file_oid(name, sizeof(name), ino, objno);
				if (store_stat(ly.pool, name, &st) == 0)
					total += st.size < osize ? st.size : osize;
				/* a key without its object (a crash between the two): nothing */
			} else {
				exact = false;
				total += osize;
			}
		}
		if (n)
			snprintf(after, sizeof(after), "%s", kv[n - 1].key);
		store_kv_free(kv, n);
		kv = NULL;
		if (!n)
			break;
	}
	if (r || more)
		total = key[0];   /* cannot tell: the size stands (and is not asked again for this version) */
	if (!exact && total > key[0])
		total = key[0];
	pthread_mutex_lock(&in->lock);
	/* only if nothing changed meanwhile: else the next getattr counts again */
	{
		uint64_t now[3];

		alloc_key_of(in, now);
		struct lc_blocks *b;

		if (!memcmp(now, key, sizeof(now)) && !in->dirty_meta && !in->dirty && (b = lc_blocks_get_locked(in))) {
			b->alloc_known = true;
			b->alloc_bytes = total;
			memcpy(b->alloc_key, now, sizeof(now));
		}
	}
	pthread_mutex_unlock(&in->lock);
}

/* ---- the object index (store/file_data.c) ------------------------------- */

#define KNOWN ((void *)1)

/* the index op for those of @objs not known to be listed; NULL: all known (or *@r: no memory) */
static struct store_op *index_op(struct lc_inode *in, const uint64_t *objs, size_t n, int *r)
{
	struct store_op *op = NULL;

	struct xarray *xa = atomic_load_explicit(&in->objs, memory_order_acquire);

	*r = 0;
	for (size_t i = 0; i < n; i++) {
		rcu_read_lock();
		bool known = xa && xa_load(xa, objs[i]) != NULL;
		rcu_read_unlock();
		if (known)
			continue;
		if (!op && !(op = store_op_new())) {
			*r = -ENOMEM;
			return NULL;
		}
		store_file_index_note(op, objs[i]);
	}
	return op;
}

void lc_obj_index_known(struct lc_inode *in, const uint64_t *objs, size_t n)
{
	/* best effort: a key we fail to remember is only set again */
	struct xarray *xa = lc_obj_index_set(in);

	for (size_t i = 0; xa && i < n; i++)
		xa_store(xa, objs[i], KNOWN);
}

int lc_obj_index_submit(struct lclient *c, struct lc_io_batch *b, struct lc_inode *in, const uint64_t *objs,
			size_t n)
{
	char oid[64];
	int r;
	struct store_op *op = index_op(in, objs, n, &r);

	if (!op)
		return r;
	store_file_index_oid(oid, sizeof(oid), in->ino);
	perf_inc(&c->perf.index_ops, 1);
	lc_io_batch_submit_op(c, b, oid, op);
	return 1;
}

int lc_obj_index(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n)
{
	char oid[64];
	int r;
	struct store_op *op = index_op(in, objs, n, &r);

	if (!op)
		return r;
	store_file_index_oid(oid, sizeof(oid), in->ino);
	perf_inc(&c->perf.index_ops, 1);
	r = store_op_exec(c->data, oid, op);
	if (r == -ENOSPC)
		r = lc_obj_index_present(c, in, objs, n);
	if (r < 0) {
		derr(CLIENT, "object index of %" PRIx64 ": %s", in->ino, strerror(-r));
		return r;
	}
	lc_obj_index_known(in, objs, n);
	return 0;
}

int lc_obj_index_present(struct lclient *c, struct lc_inode *in, const uint64_t *objs, size_t n)
{
	char oid[64], key[32];
	void *v = NULL;
	size_t vl;

	store_file_index_oid(oid, sizeof(oid), in->ino);
	for (size_t i = 0; i < n; i++) {
		int r = store_omap_get(c->data, oid, (store_file_index_key(key, sizeof(key), objs[i]), key), &v, &vl);

		free(v);
		v = NULL;
		if (r < 0)
			return -ENOSPC;
	}
	return 0;
}

bool lc_obj_indexed(struct lc_inode *in, uint64_t objno)
{
	struct xarray *xa = atomic_load_explicit(&in->objs, memory_order_acquire);

	rcu_read_lock();
	bool known = xa && xa_load(xa, objno) != NULL;
	rcu_read_unlock();
	return known;
}

int lc_obj_index_range(struct lclient *c, struct lc_inode *in, const struct store_file_layout *ly, uint64_t off,
		       size_t len)
{
	uint64_t objs[16], end = off + len;
	size_t n = 0;
	int r = 0;

	/* unit by unit: the objects of a stripe are stripe_count different ones */
	while (off < end && r == 0) {
		uint64_t objno, ooff, k = store_file_map(ly, off, &objno, &ooff);
		size_t i;

		for (i = 0; i < n && objs[i] != objno; i++)
			;
		if (i == n) {
			if (n == sizeof(objs) / sizeof(objs[0])) {
				r = lc_obj_index(c, in, objs, n);
				n = 0;
			}
			objs[n++] = objno;
		}
		off += k < end - off ? k : end - off;
	}
	if (r == 0 && n)
		r = lc_obj_index(c, in, objs, n);
	return r;
}

#define io_group lc_io_batch

struct io_piece {
	struct io_group *g;
	char *buf;          /* reads: where the bytes go */
	size_t len;
	bool read;
	bool ignore_enoent; /* truncate/remove of objects that may not exist */
};

static unsigned int max_inflight(void);

static void group_init(struct io_group *g)
{
	g->pool = NULL;
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->pending = 0;
	g->err = 0;
	g->maxq = max_inflight();
}

static void group_destroy(struct io_group *g)
{
	pthread_mutex_destroy(&g->m);
	pthread_cond_destroy(&g->cv);
}

static void piece_done(int r, void *arg)
{
	struct io_piece *p = arg;
	struct io_group *g = p->g;

	if (p->read) {
		if (r == -ENOENT)
			r = 0;
		if (r >= 0 && (size_t)r < p->len)
			memset(p->buf + r, 0, p->len - (size_t)r);
	} else if (r == -ENOENT && p->ignore_enoent) {
		r = 0;
	}
	pthread_mutex_lock(&g->m);
	if (r < 0 && !g->err)
		g->err = r;
	g->pending--;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->m);
	free(p);
}

/* wait until fewer than @max pieces are in flight */
static void group_wait(struct io_group *g, unsigned int max)
{
	pthread_mutex_lock(&g->m);
	if (g->pending > max) {
		pthread_mutex_unlock(&g->m);
		lockdep_might_wait("the object store");
		lc_op_wait_set(LC_WAIT_STORE, 0);
		pthread_mutex_lock(&g->m);
		while (g->pending > max)
			pthread_cond_wait(&g->cv, &g->m);
		lc_op_wait_clear();
	}
	pthread_mutex_unlock(&g->m);
}

static unsigned int max_inflight(void)
{
	uint64_t m = cfg_uint(CFG_client_max_io_inflight);
	return m ? (unsigned int)m : 1;
}

static struct io_piece *piece_new(struct io_group *g)
{
	struct io_piece *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->g = g;
	pthread_mutex_lock(&g->m);
	g->pending++;
	pthread_mutex_unlock(&g->m);
	return p;
}

static void piece_failed(struct io_piece *p, int r)
{
	/* the store did not take it: complete it ourselves */
	p->read = false;
	p->ignore_enoent = false;
	piece_done(r, p);
}

/* ---- reads: waited for in the reader's thread ------------------------------ */

/* One object extent read in flight (lc_obj_read and readahead chunks). */
int lc_obj_read_start(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		      char *buf, struct store_aio **out)
{
	uint64_t objno, ooff;
	char oid[64];

	store_file_map(ly, off, &objno, &ooff);
	lc_obj_name(oid, sizeof(oid), ino, objno);
	if (!pool_of(c, ly))
		return -EIO;
	return store_aio_read(pool_of(c, ly), oid, ooff, len, buf, out);
}

int lc_obj_read_lend_start(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off,
			   size_t len, struct store_aio **out)
{
	uint64_t objno, ooff;
	char oid[64];

	if (!pool_of(c, ly))
		return -EIO;
	if (!cfg_bool(CFG_client_read_lend) || !store_can_lend(pool_of(c, ly)))
		return -EOPNOTSUPP;
	store_file_map(ly, off, &objno, &ooff);
	lc_obj_name(oid, sizeof(oid), ino, objno);
	return store_aio_read_lend(pool_of(c, ly), oid, ooff, len, out);
}

int lc_obj_read_end(struct store_aio *a, char *buf, size_t len)
{
	ssize_t r = store_aio_wait(a);

	if (r == -ENOENT)
		r = 0;        /* never written: a hole */
	if (r < 0)
		return (int)r;
	if ((size_t)r < len)
		memset(buf + r, 0, len - (size_t)r);   /* past the object's end: zeros */
	return 0;
}

int lc_obj_read(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		char *buf)
{
	struct piece {
		struct store_aio *a;
		char *buf;
		size_t len;
	} v[16];
	unsigned int maxq = max_inflight();
	size_t head = 0, n = 0;   /* v is a ring: [head, head + n) in flight */
	int err = 0, r;

	if (maxq > sizeof(v) / sizeof(v[0]))
		maxq = sizeof(v) / sizeof(v[0]);
	/* one read per object extent, all in flight (up to maxq), waited in order */
	while (len > 0 || n > 0) {
		if (len > 0 && n < maxq && !err) {
			uint64_t objno, ooff, k = store_file_map(ly, off, &objno, &ooff);
			struct piece *p = &v[(head + n) % maxq];

			if (k > len)
				k = len;
			r = lc_obj_read_start(c, ino, ly, off, k, buf, &p->a);
			if (r < 0) {
				err = r;
			} else {
				p->buf = buf;
				p->len = k;
				n++;
			}
			off += k;
			len -= k;
			buf += k;
			continue;
		}
		if (n == 0)
			break;
		r = lc_obj_read_end(v[head].a, v[head].buf, v[head].len);
		if (r < 0 && !err)
			err = r;
		head = (head + 1) % maxq;
		n--;
	}
	return err;
}

/*
 * Asked before every write(): the answer is kept for 100 ms, so a write
 * never waits for the store to say how full it is (on rados that is a
 * monitor command).
 */
bool lc_data_full(struct lclient *c)
{
	struct store_space sp;
	uint64_t now = now_mono_ns(), at = atomic_load(&c->full_checked);

	if (!c->store)
		return false;   /* lclient_create_local: the caller owns the store */
	if (at && mono_since(now, at) < 100000000ull)
		return atomic_load(&c->full);
	if (!atomic_compare_exchange_strong(&c->full_checked, &at, now))
		return atomic_load(&c->full);   /* another writer is asking */
	bool got = store_space(c->store, &sp) == 0;

	atomic_store(&c->nearfull, got && sp.state >= STORE_SPACE_NEARFULL);
	atomic_store(&c->full, got && sp.state >= STORE_SPACE_FULL);
	return atomic_load(&c->full);
}

bool lc_data_nearfull(struct lclient *c)
{
	return lc_data_full(c) || atomic_load(&c->nearfull);
}

int lc_obj_write(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t off, size_t len,
		 const char *buf)
{
	struct io_group g;
	unsigned int maxq = max_inflight();
	char oid[64];
	int r;

	if (!pool_of(c, ly))
		return -EIO;
	group_init(&g);
	while (len > 0) {
		uint64_t objno, ooff;
		size_t n = (size_t)store_file_map(ly, off, &objno, &ooff);
		if (n > len)
			n = len;
		lc_obj_name(oid, sizeof(oid), ino, objno);
		struct store_op *op = store_op_new();
		struct io_piece *p = op ? piece_new(&g) : NULL;
		if (!p) {
			if (op)
				store_op_free(op);
			pthread_mutex_lock(&g.m);
			if (!g.err)
				g.err = -ENOMEM;
			pthread_mutex_unlock(&g.m);
			break;
		}
		store_op_write(op, ooff, buf, n);
		r = store_op_submit(pool_of(c, ly), oid, op, piece_done, p);
		if (r < 0)
			piece_failed(p, r);
		group_wait(&g, maxq - 1);
		off += n;
		len -= n;
		buf += n;
	}
	group_wait(&g, 0);
	r = g.err;
	group_destroy(&g);
	return r;
}

int lc_obj_truncate(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t old_size,
		    uint64_t new_size)
{
	struct store_file_trim t;
	uint64_t bound = lc_max_file_size(c);
	int r;

	if (old_size <= new_size)
		return 0;
	/* without indexes: every object the old size covers, never past the
	 * limit (a size set before there was one says nothing) */
	if (old_size > bound)
		old_size = bound > new_size ? bound : new_size;
	store_file_trim_init(&t, ino, ly, new_size, old_size, c->data_indexed);
	if (!(t.data = pool_of(c, ly)))
		return -EIO;
	do
		r = store_file_trim_step(c->data, &t, 1024, max_inflight());
	while (r > 0);
	if (r < 0)
		derr(CLIENT, "truncate of %" PRIx64 " to %" PRIu64 ": %s", ino, new_size, strerror(-r));
	return r;
}

void lc_io_batch_init(struct lc_io_batch *b)
{
	group_init(b);
}

static void submit_op(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op,
		      bool ignore_enoent)
{
	struct io_piece *p = piece_new(b);
	int r;

	if (!p) {
		store_op_free(op);
		pthread_mutex_lock(&b->m);
		if (!b->err)
			b->err = -ENOMEM;
		pthread_mutex_unlock(&b->m);
		return;
	}
	p->ignore_enoent = ignore_enoent;
	r = store_op_submit(b->pool ? b->pool : c->data, oid, op, piece_done, p);
	if (r < 0)
		piece_failed(p, r);
	group_wait(b, b->maxq - 1);
}

void lc_io_batch_submit_op(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op)
{
	submit_op(c, b, oid, op, false);
}

void lc_io_batch_submit_maybe(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op)
{
	submit_op(c, b, oid, op, true);
}

int lc_io_batch_wait(struct lc_io_batch *b)
{
	int r;

	group_wait(b, 0);
	r = b->err;
	group_destroy(b);
	return r;
}
