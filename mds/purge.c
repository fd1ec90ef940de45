/*
 * purge.c - removing the data objects of files whose last link is gone.
 *
 * When a regular file with data dies (unlink, rename over it), its inode
 * number, size and object size go into the purge queue: a journaled omap
 * "mds_purge" (ino -> size, object size) in the same entry as the unlink,
 * so a crash loses no purge.  After mds_purge_delay the purge thread removes
 * the file's objects from the data pool and journals the queue entry's
 * removal.  Truncation is different: the client that truncates trims the
 * objects itself (it knows what it still buffers).
 *
 * What a purge costs is what exists, not what the size says: the objects
 * are found through the file's object index in the data pool
 * (store/file_data.c), so a 1 TiB sparse file with one byte written is two
 * removals.  Pools from before the index (no marker) fall back to the
 * object numbers the size covers, bounded by max_file_size.
 *
 * The purge thread is its own: the ticker, which keeps sessions and the
 * journal going, never waits for a purge.  It works in slices of
 * mds_purge_slice objects (mds_purge_max_inflight in flight) and looks for
 * shutdown between slices, so SIGTERM stops it within one slice; what is
 * left stays journaled and is resumed by the next start (the index holds
 * exactly the objects that remain).
 *
 * The delay stands in for what caps will give (issue 3): until the MDS
 * knows who still has the file open, a client reading an unlinked file it
 * holds open keeps its data for mds_purge_delay seconds.
 *
 * The in-memory queue is protected by mds->lock; the thread's stop flag and
 * wake-ups by plock (taken under mds->lock by enqueue, alone elsewhere).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdcache.h"
#include "mds/purge.h"

#define V_PURGE 2   /* 2: the data pool's id */

struct purge {
	struct purge *next;
	uint64_t ino, size;
	uint32_t object_size;
	uint32_t pool;          /* data pool id (fsset.c's table; 0: m->data) */
	uint64_t due_ns;
};

static struct purge *queue, **queue_tail = &queue;   /* protected by mds->lock */
static struct perf_counter queued, purged_files, purged_objects, slices, active;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcond;                 /* CLOCK_MONOTONIC; with plock */
static bool pstop, pkick, prunning;          /* protected by plock */
static bool pcond_ready;                     /* main thread only */
static pthread_t pthread;

static void kick(void)
{
	pthread_mutex_lock(&plock);
	if (prunning) {
		pkick = true;
		pthread_cond_signal(&pcond);
	}
	pthread_mutex_unlock(&plock);
}


static void key_ino(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%016" PRIx64, ino);
}

/* Caller holds mds->lock. */
static void enqueue_locked(struct mds *m, uint64_t ino, uint64_t size, uint32_t osize, uint32_t pool)
{
	struct purge *p;

	lockdep_assert_held(&m->lock);
	for (p = queue; p; p = p->next)
		if (p->ino == ino)
			return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;      /* the journaled entry stays: purged after a restart */
	p->ino = ino;
	p->size = size;
	p->object_size = osize ? osize : (4u << 20);
	p->pool = pool;
	p->due_ns = now_mono_ns() + (uint64_t)(cfg_double(CFG_mds_purge_delay) * 1e9);
	*queue_tail = p;
	queue_tail = &p->next;
	perf_inc(&queued, 1);
	kick();
}

static int decode(const void *v, size_t len, uint64_t *size, uint32_t *osize, uint32_t *pool)
{
	struct dec c, s;
	uint8_t ver;

	dec_init(&c, v, len);
	if (!(ver = dec_enter(&c, V_PURGE, &s)))
		return -EBADMSG;
	*size = dec_u64(&s);
	*osize = dec_u32(&s);
	*pool = ver >= 2 ? dec_u32(&s) : 0;
	return s.bad ? -EBADMSG : 0;
}

void purge_queue_inode(struct mds *m, struct txn *t, const struct minode *in)
{
	struct store_file_layout ly;
	uint64_t bound;
	struct mdsp_buf b;
	size_t off;
	char key[32];

	if (!S_ISREG(in->a.mode) || !in->a.size)
		return;
	mdsp_buf_init(&b);
	off = enc_begin(&b, V_PURGE, 1);   /* a v1 reader reads size and object size, and purges pool 0 */
	/*
	 * The record keeps an object size and a size bound that a purge reads
	 * in the plain layout (the object index is what counts; the bound only
	 * where there is none): a striped file's bound is the plain size that
	 * covers every object it may have.
	 */
	store_file_layout_init(&ly, in->a.object_size, in->a.stripe_unit, in->a.stripe_count);
	bound = store_file_layout_plain(&ly) ? in->a.size : store_file_obj_end(&ly, in->a.size) * ly.object_size;
	enc_u64(&b, bound);
	enc_u32(&b, ly.object_size);
	enc_u32(&b, in->a.pool);               /* v2 */
	enc_end(&b, off);
	key_ino(key, sizeof(key), in->a.ino);
	txn_edit(t, EDIT_SET, OID_PURGE, key, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	enqueue_locked(m, in->a.ino, bound, ly.object_size, in->a.pool);
	(void)m;
}

/* Caller holds mds->lock. */
static void dequeue_locked(struct mds *m, uint64_t ino)
{
	struct purge **pp, *p;

	lockdep_assert_held(&m->lock);
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
	uint32_t osize, pool;
	int r;

	if (op == EDIT_RM) {
		dequeue_locked(m, ino);
		return 0;
	}
	if (op != EDIT_SET)
		return 0;
	r = decode(val, len, &size, &osize, &pool);
	if (!r)
		enqueue_locked(m, ino, size, osize, pool);
	return r;
}

int purge_load(struct mds *m)
{
	struct store_omap_iter it;
	const struct store_kv *kv;

	store_omap_iter_init(&it, m->meta, OID_PURGE, NULL, 1024);
	while ((kv = store_omap_iter_next(&it)) != NULL)
		if (purge_replay_edit(m, EDIT_SET, kv->key, kv->val, (uint32_t)kv->len))
			derr(MDS, "purge queue: bad entry %s skipped", kv->key);
	return store_omap_iter_end(&it);
}


/* wait until @until_ns (monotonic), a kick or stop; true when stopping */
static bool wait_until(uint64_t until_ns)
{
	struct timespec ts = ns_to_timespec(until_ns);
	bool stop;

	pthread_mutex_lock(&plock);
	while (!pstop && !pkick && now_mono_ns() < until_ns)
		if (pthread_cond_timedwait(&pcond, &plock, &ts) == ETIMEDOUT)
			break;
	pkick = false;
	stop = pstop;
	pthread_mutex_unlock(&plock);
	return stop;
}

static bool stopping(void)
{
	pthread_mutex_lock(&plock);
	bool s = pstop;
	pthread_mutex_unlock(&plock);
	return s;
}

/*
 * Data pool @id's handle (opened at its first use, kept in the table).
 * -ENOENT: the pool is no longer one of ours (nothing of the file's data
 * can be reached; its index is purged all the same).  No lock held.
 */
static int pool_handle(struct mds *m, uint32_t id, struct store_pool **out)
{
	struct store_pool *p = NULL, *mine = NULL;
	char *name = NULL;
	int r;

	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		if (m->data_pools[i].id == id) {
			p = m->data_pools[i].p;
			if (!p)
				name = strdup(m->data_pools[i].name);
		}
	pthread_mutex_unlock(&m->lock);
	if (p) {
		*out = p;
		return 0;
	}
	if (!name)
		return -ENOENT;
	r = store_pool_open(m->data_st ? m->data_st : m->st, name, NULL, &mine);
	if (r) {
		derr(MDS, "purge: cannot open data pool %s: %s", name, strerror(-r));
		free(name);
		return r;
	}
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		if (m->data_pools[i].id == id && !strcmp(m->data_pools[i].name, name)) {
			if (!m->data_pools[i].p) {
				m->data_pools[i].p = mine;
				mine = NULL;
			}
			p = m->data_pools[i].p;
		}
	pthread_mutex_unlock(&m->lock);
	if (mine)
		store_pool_close(mine);
	free(name);
	if (!p)
		return -ENOENT;
	*out = p;
	return 0;
}

/*
 * Remove the data objects of @p in slices.  Return 0 when every one is
 * gone, 1 when stopped by shutdown (the rest stays queued), -errno.
 */
static int purge_objects(struct mds *m, const struct purge *p)
{
	struct store_file_trim t;
	struct store_file_layout ly;
	uint64_t bound = p->size < m->max_file_size ? p->size : m->max_file_size;
	int r = 0;

	store_file_layout_init(&ly, p->object_size, 0, 0);
	store_file_trim_init(&t, p->ino, &ly, 0, bound, m->data_indexed);
	/* the index is in the first pool, the data where the layout said */
	if (p->pool && (r = pool_handle(m, p->pool, &t.data)) && r != -ENOENT)
		return r;
	if (r == -ENOENT)
		dinfo(MDS, "purge of inode %" PRIx64 ": its data pool %" PRIu32 " is gone; its index goes",
		      p->ino, p->pool);
	for (;;) {
		uint64_t before = t.removed;
		unsigned int slice = (unsigned int)cfg_uint(CFG_mds_purge_slice);
		unsigned int inflight = (unsigned int)cfg_uint(CFG_mds_purge_max_inflight);
		double delay = cfg_double(CFG_mds_debug_purge_slice_delay);

		r = store_file_trim_step(m->data, &t, slice, inflight);
		perf_inc(&purged_objects, t.removed - before);
		perf_inc(&slices, 1);
		if (r <= 0)
			return r;
		if (delay > 0 ? wait_until(now_mono_ns() + (uint64_t)(delay * 1e9)) : stopping()) {
			dinfo(MDS, "purge of inode %" PRIx64 " stopped by shutdown after %" PRIu64
			      " objects; the rest is purged after the next start", p->ino, t.removed);
			return 1;
		}
	}
}

static void *purge_main(void *arg)
{
	struct mds *m = arg;

	for (;;) {
		struct purge p = { 0 };
		struct txn t;
		char key[32];
		uint64_t now = now_mono_ns(), due;
		int r;

		pthread_mutex_lock(&m->lock);
		due = queue ? queue->due_ns : now + 1000000000ull;
		if (queue)
			p = *queue;
		pthread_mutex_unlock(&m->lock);
		if (due > now) {
			if (wait_until(due))
				break;
			continue;
		}
		if (stopping())
			break;
		perf_set(&active, 1);
		r = purge_objects(m, &p);
		perf_set(&active, 0);
		if (r == 1)
			break;
		pthread_mutex_lock(&m->lock);
		if (r) {
			/* try again later */
			if (queue && queue->ino == p.ino)
				queue->due_ns = now_mono_ns() + 10000000000ull;
			pthread_mutex_unlock(&m->lock);
			derr(MDS, "purging the data of inode %" PRIx64 " failed: %s; will retry", p.ino, strerror(-r));
			continue;
		}
		dequeue_locked(m, p.ino);
		txn_init(&t);
		key_ino(key, sizeof(key), p.ino);
		txn_edit(&t, EDIT_RM, OID_PURGE, key, NULL, 0, NULL);
		journal_submit_locked(m, &t, NULL);
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		perf_inc(&purged_files, 1);
		dout(MDS, 10, "purged the data of inode %" PRIx64 " (%" PRIu64 " bytes)", p.ino, p.size);
	}
	return NULL;
}

int purge_start(struct mds *m)
{
	pthread_condattr_t ca;
	int r;

	if (!pcond_ready) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&pcond, &ca);
		pthread_condattr_destroy(&ca);
		pcond_ready = true;
	}
	pthread_mutex_lock(&plock);
	pstop = pkick = false;
	prunning = true;
	pthread_mutex_unlock(&plock);
	r = pthread_create(&pthread, NULL, purge_main, m);
	if (r) {
		pthread_mutex_lock(&plock);
		prunning = false;
		pthread_mutex_unlock(&plock);
		return -r;
	}
	pthread_setname_np(pthread, "mds-purge");
	return 0;
}

void purge_stop(struct mds *m)
{
	(void)m;
	pthread_mutex_lock(&plock);
	bool was = prunning;
	pstop = true;
	prunning = false;
	if (was)
		pthread_cond_signal(&pcond);
	pthread_mutex_unlock(&plock);
	if (was)
		pthread_join(pthread, NULL);
}

void purge_register_perf(struct mds *m)
{
	perf_register_counter("mds_purge", "files", &purged_files);
	perf_register_counter("mds_purge", "objects", &purged_objects);
	perf_register_counter("mds_purge", "queued", &queued);
	perf_register_counter("mds_purge", "slices", &slices);
	perf_register_counter("mds_purge", "active", &active);
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
