/*
 * purge.c - removing the data objects of files whose last link is gone.
 *
 * When a regular file with data dies (unlink, rename over it), its inode
 * number, size and object size go into the purge queue: a journaled omap
 * "mds_purge" (ino -> size, object size) in the same entry as the unlink,
 * so a crash loses no purge.  After mds_purge_delay the ticker removes the
 * objects "<ino hex>.<objno %08x>" covering the size (plus one object past
 * it, for data the client had written but not yet reported) from the data
 * pool and journals the queue entry's removal.  Truncation is different:
 * the client that truncates trims the objects itself (it knows what it
 * still buffers).
 *
 * The delay stands in for what caps will give (issue 3): until the MDS
 * knows who still has the file open, a client reading an unlinked file it
 * holds open keeps its data for mds_purge_delay seconds.
 *
 * The in-memory queue is protected by mds->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"

#define V_PURGE 1

struct purge {
	struct purge *next;
	uint64_t ino, size;
	uint32_t object_size;
	uint64_t due_ns;
};

static struct purge *queue, **queue_tail = &queue;   /* protected by mds->lock */
static struct perf_counter queued, purged_files, purged_objects;

static void key_ino(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%016" PRIx64, ino);
}

static void enqueue_locked(uint64_t ino, uint64_t size, uint32_t osize)
{
	struct purge *p;

	for (p = queue; p; p = p->next)
		if (p->ino == ino)
			return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;      /* the journaled entry stays: purged after a restart */
	p->ino = ino;
	p->size = size;
	p->object_size = osize ? osize : (4u << 20);
	p->due_ns = now_mono_ns() + (uint64_t)(cfg_double(CFG_mds_purge_delay) * 1e9);
	*queue_tail = p;
	queue_tail = &p->next;
	perf_inc(&queued, 1);
}

static int decode(const void *v, size_t len, uint64_t *size, uint32_t *osize)
{
	struct dec c, s;

	dec_init(&c, v, len);
	if (!dec_enter(&c, V_PURGE, &s))
		return -EBADMSG;
	*size = dec_u64(&s);
	*osize = dec_u32(&s);
	return s.bad ? -EBADMSG : 0;
}

void purge_queue_inode(struct mds *m, struct txn *t, const struct minode *in)
{
	struct mdsp_buf b;
	size_t off;
	char key[32];

	if (!S_ISREG(in->a.mode) || !in->a.size)
		return;
	mdsp_buf_init(&b);
	off = enc_begin(&b, V_PURGE, 1);
	enc_u64(&b, in->a.size);
	enc_u32(&b, in->a.object_size);
	enc_end(&b, off);
	key_ino(key, sizeof(key), in->a.ino);
	txn_edit(t, EDIT_SET, OID_PURGE, key, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	enqueue_locked(in->a.ino, in->a.size, in->a.object_size);
	(void)m;
}

static void dequeue_locked(uint64_t ino)
{
	struct purge **pp, *p;

	for (pp = &queue; (p = *pp); pp = &p->next)
		if (p->ino == ino) {
			*pp = p->next;
			if (queue_tail == &p->next)
				queue_tail = pp;
			free(p);
			perf_set(&queued, perf_get(&queued) - 1);
			return;
		}
}

int purge_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len)
{
	uint64_t ino = strtoull(key, NULL, 16), size;
	uint32_t osize;
	int r;

	if (op == EDIT_RM) {
		dequeue_locked(ino);
		return 0;
	}
	if (op != EDIT_SET)
		return 0;
	r = decode(val, len, &size, &osize);
	if (!r)
		enqueue_locked(ino, size, osize);
	return r;
}

int purge_load(struct mds *m)
{
	struct store_kv *kvs = NULL;
	size_t n = 0, i;
	bool more = true;
	char *after = NULL;
	int r = 0;

	while (more) {
		r = store_omap_list(m->meta, OID_PURGE, after, NULL, 1024, &kvs, &n, &more);
		if (r == -ENOENT) {
			r = 0;
			break;
		}
		if (r)
			break;
		for (i = 0; i < n; i++)
			if (purge_replay_edit(m, EDIT_SET, kvs[i].key, kvs[i].val, (uint32_t)kvs[i].len))
				derr(MDS, "purge queue: bad entry %s skipped", kvs[i].key);
		free(after);
		after = n ? strdup(kvs[n - 1].key) : NULL;
		store_kv_free(kvs, n);
		if (!after)
			break;
	}
	free(after);
	return r;
}

struct purge_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight;
	int err;
};

static void purge_cb(int r, void *arg)
{
	struct purge_wait *w = arg;

	pthread_mutex_lock(&w->lock);
	if (r && r != -ENOENT && !w->err)
		w->err = r;
	w->inflight--;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Remove the data objects of @p; 0 when every one is gone. */
static int purge_objects(struct mds *m, const struct purge *p)
{
	struct purge_wait w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	uint64_t nobj = p->size / p->object_size + 2, i;
	char oid[64];

	for (i = 0; i < nobj; i++) {
		struct store_op *op = store_op_new();

		if (!op) {
			w.err = -ENOMEM;
			break;
		}
		store_op_remove(op);
		snprintf(oid, sizeof(oid), "%" PRIx64 ".%08" PRIx64, p->ino, i);
		pthread_mutex_lock(&w.lock);
		while (w.inflight >= 32)
			pthread_cond_wait(&w.cond, &w.lock);
		w.inflight++;
		pthread_mutex_unlock(&w.lock);
		if (store_op_submit(m->data, oid, op, purge_cb, &w)) {
			pthread_mutex_lock(&w.lock);
			w.inflight--;
			w.err = -EIO;
			pthread_mutex_unlock(&w.lock);
			break;
		}
	}
	pthread_mutex_lock(&w.lock);
	while (w.inflight)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	if (!w.err)
		perf_inc(&purged_objects, nobj);
	return w.err;
}

void purge_tick(struct mds *m, bool all)
{
	for (;;) {
		struct purge p;
		struct txn t;
		char key[32];
		int r;

		pthread_mutex_lock(&m->lock);
		if (!queue || (!all && queue->due_ns > now_mono_ns())) {
			pthread_mutex_unlock(&m->lock);
			return;
		}
		p = *queue;
		pthread_mutex_unlock(&m->lock);

		r = purge_objects(m, &p);
		pthread_mutex_lock(&m->lock);
		if (r) {
			/* try again later */
			if (queue && queue->ino == p.ino)
				queue->due_ns = now_mono_ns() + 10000000000ull;
			pthread_mutex_unlock(&m->lock);
			derr(MDS, "purging the data of inode %" PRIx64 " failed: %s; will retry", p.ino, strerror(-r));
			return;
		}
		dequeue_locked(p.ino);
		txn_init(&t);
		key_ino(key, sizeof(key), p.ino);
		txn_edit(&t, EDIT_RM, OID_PURGE, key, NULL, 0, NULL);
		journal_submit_locked(m, &t, NULL);
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		perf_inc(&purged_files, 1);
		dout(MDS, 10, "purged the data of inode %" PRIx64 " (%" PRIu64 " bytes)", p.ino, p.size);
	}
}

void purge_register_perf(struct mds *m)
{
	perf_register_counter("mds_purge", "files", &purged_files);
	perf_register_counter("mds_purge", "objects", &purged_objects);
	perf_register_counter("mds_purge", "queued", &queued);
}

void purge_free(struct mds *m)
{
	struct purge *p, *n;

	perf_unregister_group("mds_purge");
	pthread_mutex_lock(&m->lock);
	for (p = queue; p; p = n) {
		n = p->next;
		free(p);
	}
	queue = NULL;
	queue_tail = &queue;
	perf_set(&queued, 0);
	pthread_mutex_unlock(&m->lock);
}
