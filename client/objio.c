/*
 * objio.c - file data in the object store (DESIGN.md section 4).
 *
 * A file's bytes are striped over objects "<ino hex>.<objno %08x>" of
 * object_size bytes each in the data pool: byte B of the file lives at
 * offset B % object_size of object B / object_size.  Objects that were
 * never written do not exist and read as zeros, as do the parts of an
 * object past its end (sparse files cost nothing).
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

#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "store/store.h"

void lc_obj_name(char *buf, size_t len, uint64_t ino, uint64_t objno)
{
	snprintf(buf, len, "%" PRIx64 ".%08" PRIx64, ino, objno);
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
	while (g->pending > max)
		pthread_cond_wait(&g->cv, &g->m);
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

void lc_io_batch_read(struct lclient *c, struct lc_io_batch *b, uint64_t ino, uint32_t osize, uint64_t off,
		      size_t len, char *buf)
{
	char oid[64];
	int r;

	if (!osize)
		osize = c->default_object_size;
	while (len > 0) {
		uint64_t objno = off / osize;
		uint64_t ooff = off % osize;
		size_t n = osize - ooff;
		if (n > len)
			n = len;
		lc_obj_name(oid, sizeof(oid), ino, objno);
		struct io_piece *p = piece_new(b);
		if (!p) {
			pthread_mutex_lock(&b->m);
			if (!b->err)
				b->err = -ENOMEM;
			pthread_mutex_unlock(&b->m);
			return;
		}
		p->buf = buf;
		p->len = n;
		p->read = true;
		r = store_read_submit(c->data, oid, ooff, n, buf, piece_done, p);
		if (r < 0)
			piece_failed(p, r);
		group_wait(b, b->maxq - 1);
		off += n;
		len -= n;
		buf += n;
	}
}

int lc_obj_read(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t off, size_t len, char *buf)
{
	struct io_group g;

	group_init(&g);
	lc_io_batch_read(c, &g, ino, osize, off, len, buf);
	return lc_io_batch_wait(&g);
}

bool lc_data_full(struct lclient *c)
{
	struct store_space sp;

	if (!c->store)
		return false;   /* lclient_create_local: the caller owns the store */
	return store_space(c->store, &sp) == 0 && sp.state >= STORE_SPACE_FULL;
}

int lc_obj_write(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t off, size_t len, const char *buf)
{
	struct io_group g;
	unsigned int maxq = max_inflight();
	char oid[64];
	int r;

	if (!osize)
		osize = c->default_object_size;
	group_init(&g);
	while (len > 0) {
		uint64_t objno = off / osize;
		uint64_t ooff = off % osize;
		size_t n = osize - ooff;
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
		r = store_op_submit(c->data, oid, op, piece_done, p);
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

int lc_obj_truncate(struct lclient *c, uint64_t ino, uint32_t osize, uint64_t old_size, uint64_t new_size)
{
	struct io_group g;
	unsigned int maxq = max_inflight();
	char oid[64];
	int r;

	if (!osize)
		osize = c->default_object_size;
	if (old_size <= new_size)
		return 0;
	group_init(&g);
	uint64_t first = new_size / osize;
	uint64_t last = (old_size - 1) / osize;
	for (uint64_t o = first; o <= last; o++) {
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
		p->ignore_enoent = true;
		lc_obj_name(oid, sizeof(oid), ino, o);
		uint64_t keep = o == first ? new_size % osize : 0;
		if (keep) {
			/* never create an object just to cut it */
			store_op_assert_exists(op);
			store_op_truncate(op, keep);
		} else {
			store_op_remove(op);
		}
		r = store_op_submit(c->data, oid, op, piece_done, p);
		if (r < 0)
			piece_failed(p, r == -ENOENT ? 0 : r);
		group_wait(&g, maxq - 1);
	}
	group_wait(&g, 0);
	r = g.err;
	group_destroy(&g);
	if (r < 0)
		derr(CLIENT, "truncate of %" PRIx64 " from %" PRIu64 " to %" PRIu64 ": %s", ino, old_size, new_size,
		     strerror(-r));
	return r;
}

void lc_io_batch_init(struct lc_io_batch *b)
{
	group_init(b);
}

void lc_io_batch_submit_op(struct lclient *c, struct lc_io_batch *b, const char *oid, struct store_op *op)
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
	r = store_op_submit(c->data, oid, op, piece_done, p);
	if (r < 0)
		piece_failed(p, r);
	group_wait(b, b->maxq - 1);
}

int lc_io_batch_wait(struct lc_io_batch *b)
{
	int r;

	group_wait(b, 0);
	r = b->err;
	group_destroy(b);
	return r;
}
