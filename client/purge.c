/*
 * purge.c - the client's purge thread: the data objects of files whose last
 * link went (lc_purge_data), removed off every other thread.
 *
 * A purge can be long (a file of many objects, or, in a pool without object
 * indexes, every object number the size covers) and the threads that ask
 * for it must not wait: FUSE workers answering unlink, and the NFS
 * gateway's lease reaper, whose closes of expired opens drop last
 * references.  So lc_purge_enqueue only queues in memory and kicks this
 * thread, which
 *   1. records the new entries in the persisted queue, the omap of
 *      "loligo.client_purge" in the data pool (ino -> object size and size
 *      bound), one op for all of them;
 *   2. removes each file's objects with store_file_trim in slices of
 *      client_purge_slice objects (client_max_io_inflight in flight), looking
 *      for shutdown between slices;
 *   3. removes the entry when the file's data (and its index) are gone.
 * lc_purge_stop (unmount, SIGTERM) stops within one slice and records what
 * was queued but not recorded yet; the next mount lists the persisted queue
 * and carries on (the file's index holds exactly what is left).  On the
 * local backend this is the only purge (the MDS's store holds no file
 * data); on RADOS the MDS purges too, which is harmless: both are
 * idempotent.
 *
 * A full store refuses step 1 (it needs space) but not the removals, which
 * free space: then the entries are purged without being recorded first.
 *
 * Left out: a crash (kill -9) between the MDS's unlink reply and step 1
 * leaves that file's objects behind on the local backend, unless the MDS
 * purges them (it does on RADOS and, with the data store shared, on local).
 *
 * Locking: p->lock protects the queue and the flags; no lock is held across
 * store I/O.
 *
 * Cost: an rm -rf queues thousands of files while the first ones are being
 * purged, so nothing here walks the queue per item: duplicates are found in
 * an index by ino, the unrecorded entries are the queue's tail from
 * p->unrec on (entries are appended unrecorded and recorded in order; the
 * resumed ones, recorded, are loaded before anything is queued), and the
 * next entry to purge is the first due one, normally the head.  (Each of
 * those was a walk of the whole list; with 9,000 files queued the FUSE
 * workers answering unlink and this thread spent seconds in them.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/data_int.h"
#include "common/lockdep.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "common/xarray.h"
#include "store/store.h"

#define QUEUE_OID "loligo.client_purge"
#define V_ENTRY 2   /* 2: the data pool's id */

struct pitem {
	struct pitem *next;
	uint64_t ino, size;
	uint32_t osize;
	uint32_t pool;            /* data pool id (its index is in the first pool, c->data) */
	bool recorded;            /* in the persisted queue */
	uint64_t not_before_ns;   /* retry after a failure */
};

struct lc_purger {
	struct lclient *c;
	pthread_t thread;
	pthread_mutex_t lock;     /* protects everything below */
	pthread_cond_t cond;      /* CLOCK_MONOTONIC */
	struct pitem *head, **tail;
	struct pitem **unrec;     /* the link to the first unrecorded entry (== tail: none) */
	struct xarray index;      /* ino -> its pitem (its own lock; changed under p->lock) */
	bool stop;
};

static void key_of(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%016" PRIx64, ino);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* value: u8 version, u32 object size, u64 size bound; v2: u32 pool id */
#define ENTRY_LEN_V1 13
#define ENTRY_LEN 17

static void encode(uint8_t *v, const struct pitem *it)
{
	v[0] = V_ENTRY;
	put_le(v + 1, it->osize, 4);
	put_le(v + 5, it->size, 8);
	put_le(v + 13, it->pool, 4);
}

static bool stopping(struct lc_purger *p)
{
	pthread_mutex_lock(&p->lock);
	bool s = p->stop;
	pthread_mutex_unlock(&p->lock);
	return s;
}

/* wait up to @ns; true when stopping */
static bool pause_ns(struct lc_purger *p, uint64_t ns)
{
	uint64_t until = now_mono_ns() + ns;
	struct timespec ts = ns_to_timespec(until);

	pthread_mutex_lock(&p->lock);
	while (!p->stop && now_mono_ns() < until)
		if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT)
			break;
	bool s = p->stop;
	pthread_mutex_unlock(&p->lock);
	return s;
}

/* record every unrecorded entry in one op.  p->lock not held. */
static int record_new(struct lc_purger *p)
{
	struct store_op *op = store_op_new();
	struct pitem *it;
	int n = 0, r;
	uint8_t v[ENTRY_LEN];
	char key[32];

	if (!op)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	for (it = *p->unrec; it; it = it->next) {
		key_of(key, sizeof(key), it->ino);
		encode(v, it);
		store_op_omap_set(op, key, v, sizeof(v));
		n++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!n) {
		store_op_free(op);
		return 0;
	}
	r = store_op_exec(p->c->data, QUEUE_OID, op);
	if (r < 0) {
		derr(CLIENT, "purge queue: cannot record %d entries: %s", n, strerror(-r));
		return r;
	}
	/* entries queued meanwhile were appended after the ones in the op: the
	 * first n unrecorded ones are exactly those (only this thread removes) */
	pthread_mutex_lock(&p->lock);
	for (it = *p->unrec; it && n; it = it->next, n--) {
		it->recorded = true;
		p->unrec = &it->next;
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/*
 * Remove @it's objects.  Return 0 when done, 1 when stopped by shutdown,
 * -errno on failure (retried later).
 */
static int purge_one(struct lc_purger *p, const struct pitem *it)
{
	struct lclient *c = p->c;
	struct store_file_trim t;
	struct store_file_layout ly;
	uint64_t bound = lc_max_file_size(c);
	int r;

	store_file_layout_init(&ly, it->osize, 0, 0);
	ly.pool_id = it->pool;
	/* a pool is open here when this client read or wrote a file of it;
	 * else (the file is gone, the MDS cannot name its pool any more) the
	 * MDS's purge, which every deleted file gets, removes its objects */
	if (!(ly.pool = lc_pool_peek(c, it->pool))) {
		dout(CLIENT, 5, "purge of %" PRIx64 ": data pool %" PRIu32 " not open here: left to the MDS's purge",
		     it->ino, it->pool);
		return 0;
	}
	store_file_trim_init(&t, it->ino, &ly, 0, it->size < bound ? it->size : bound, c->data_indexed);
	t.data = ly.pool;
	for (;;) {
		uint64_t before = t.removed;
		unsigned int slice = (unsigned int)cfg_uint(CFG_client_purge_slice);
		unsigned int inflight = (unsigned int)cfg_uint(CFG_client_max_io_inflight);
		double delay = cfg_double(CFG_client_debug_purge_slice_delay);

		r = store_file_trim_step(c->data, &t, slice, inflight);
		perf_inc(&c->perf.purge_objects, t.removed - before);
		if (r <= 0)
			break;
		if (delay > 0 ? pause_ns(p, (uint64_t)(delay * 1e9)) : stopping(p)) {
			dinfo(CLIENT, "purge of %" PRIx64 " stopped after %" PRIu64 " objects: resumed at the next mount",
			      it->ino, t.removed);
			return 1;
		}
	}
	if (r < 0)
		return r;
	/* done: the entry goes */
	struct store_op *op = store_op_new();
	char key[32];

	if (!op)
		return -ENOMEM;
	key_of(key, sizeof(key), it->ino);
	store_op_omap_rm(op, key);
	r = store_op_exec(c->data, QUEUE_OID, op);
	if (r == -ENOENT)
		r = 0;
	if (r == 0) {
		perf_inc(&c->perf.purge_files, 1);
		dout(CLIENT, 10, "purged the data of %" PRIx64 " (%" PRIu64 " objects)", it->ino, t.removed);
	}
	return r;
}

static void *purge_main(void *arg)
{
	struct lc_purger *p = arg;
	struct lclient *c = p->c;

	for (;;) {
		struct pitem *it, **pp;
		uint64_t now = now_mono_ns(), wait = 0;
		int r;

		/* A full store refuses the record (it needs space) but not the
		 * removals, which free it: then purge unrecorded entries too. */
		int rr = record_new(p);
		bool full = rr == -ENOSPC;

		if (rr < 0 && !full)
			pause_ns(p, 1000000000ull);
		pthread_mutex_lock(&p->lock);
		for (;;) {
			/* the first recorded entry that is due (the head, unless
			 * a purge failed and waits for its retry) */
			for (it = p->head; it; it = it->next)
				if ((it->recorded || full) && it->not_before_ns <= now)
					break;
			if (it || p->stop)
				break;
			if (*p->unrec && !full)
				break;
			wait = p->head ? 1000000000ull : 0;
			if (wait) {
				struct timespec ts = ns_to_timespec(now + wait);
				pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			} else {
				pthread_cond_wait(&p->cond, &p->lock);
			}
			now = now_mono_ns();
		}
		bool stop = p->stop;
		pthread_mutex_unlock(&p->lock);
		if (stop)
			break;
		if (!it)
			continue;   /* something new to record first */

		r = purge_one(p, it);
		if (r == 1)
			break;
		pthread_mutex_lock(&p->lock);
		if (r < 0) {
			derr(CLIENT, "purging the data of %" PRIx64 " failed: %s; will retry", it->ino, strerror(-r));
			it->not_before_ns = now_mono_ns() + 10000000000ull;
		} else {
			for (pp = &p->head; *pp != it; pp = &(*pp)->next)
				;
			*pp = it->next;
			if (p->tail == &it->next)
				p->tail = pp;
			if (p->unrec == &it->next)
				p->unrec = pp;
			xa_erase(&p->index, it->ino);
			free(it);
			perf_set(&c->perf.purge_queued, perf_get(&c->perf.purge_queued) - 1);
		}
		pthread_mutex_unlock(&p->lock);
	}
	/* what was queued but not recorded yet must survive the restart */
	record_new(p);
	return NULL;
}

static struct pitem *item_new(uint64_t ino, uint32_t osize, uint32_t pool, uint64_t size, bool recorded)
{
	struct pitem *it = calloc(1, sizeof(*it));

	if (!it)
		return NULL;
	it->ino = ino;
	it->osize = osize;
	it->pool = pool;
	it->size = size;
	it->recorded = recorded;
	return it;
}

/* p->lock held: an unrecorded @it goes to the end; a recorded one (load()
 * only, before anything unrecorded is queued) before the unrecorded ones */
static void append_locked(struct lc_purger *p, struct pitem *it)
{
	lockdep_assert_held(&p->lock);
	if (xa_insert(&p->index, it->ino, it)) {
		free(it);   /* already queued (or no memory for the index: it was queued before) */
		return;
	}
	*p->tail = it;
	p->tail = &it->next;
	if (it->recorded)
		p->unrec = p->tail;   /* nothing unrecorded is queued yet */
	perf_inc(&p->c->perf.purge_queued, 1);
}

/* the previous mounts' unfinished purges */
static int load(struct lc_purger *p)
{
	struct store_kv *kvs = NULL;
	size_t n = 0, i, total = 0;
	char *after = NULL;
	bool more = true;
	int r = 0;

	while (more) {
		r = store_omap_list(p->c->data, QUEUE_OID, after, NULL, 1024, &kvs, &n, &more);
		if (r == -ENOENT) {
			r = 0;
			break;
		}
		if (r < 0)
			break;
		for (i = 0; i < n; i++) {
			const uint8_t *v = kvs[i].val;
			char *end;
			uint64_t ino = strtoull(kvs[i].key, &end, 16);
			struct pitem *it;

			if (*end || kvs[i].len < ENTRY_LEN_V1 || v[0] < 1 || (v[0] >= 2 && kvs[i].len < ENTRY_LEN)) {
				derr(CLIENT, "purge queue: bad entry %s skipped", kvs[i].key);
				continue;
			}
			it = item_new(ino, (uint32_t)get_le(v + 1, 4), v[0] >= 2 ? (uint32_t)get_le(v + 13, 4) : 0,
				      get_le(v + 5, 8), true);
			if (!it) {
				r = -ENOMEM;
				break;
			}
			pthread_mutex_lock(&p->lock);
			append_locked(p, it);
			pthread_mutex_unlock(&p->lock);
			total++;
		}
		free(after);
		after = n ? strdup(kvs[n - 1].key) : NULL;
		store_kv_free(kvs, n);
		if (r < 0 || !after)
			break;
	}
	free(after);
	if (total)
		dinfo(CLIENT, "purge queue: %zu unfinished purges of an earlier mount resumed", total);
	return r;
}

int lc_purge_start(struct lclient *c)
{
	struct lc_purger *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int r;

	if (!p)
		return -ENOMEM;
	p->c = c;
	p->tail = &p->head;
	p->unrec = &p->head;
	xa_init(&p->index);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	r = load(p);
	if (r == 0) {
		r = -pthread_create(&p->thread, NULL, purge_main, p);
		if (r == 0)
			pthread_setname_np(p->thread, "client-purge");
	}
	if (r < 0) {
		derr(CLIENT, "cannot start the purge thread: %s", strerror(-r));
		while (p->head) {
			struct pitem *it = p->head;
			p->head = it->next;
			free(it);
		}
		xa_destroy(&p->index);
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		free(p);
		return r;
	}
	c->purger = p;
	return 0;
}

void lc_purge_stop(struct lclient *c)
{
	struct lc_purger *p = c->purger;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	c->purger = NULL;
	while (p->head) {
		struct pitem *it = p->head;
		p->head = it->next;
		free(it);
	}
	xa_destroy(&p->index);
	perf_set(&c->perf.purge_queued, 0);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

void lc_purge_enqueue(struct lclient *c, uint64_t ino, const struct store_file_layout *ly, uint64_t size)
{
	struct lc_purger *p = c->purger;
	struct pitem *it;

	if (!p) {
		/* no thread (a test client without one): do it here */
		uint64_t bound = lc_max_file_size(c);
		lc_obj_truncate(c, ino, ly, size < bound ? size : bound, 0);
		return;
	}
	/*
	 * The queue records an object size and a size bound, which a purge
	 * reads in the plain layout (the index is what counts; the bound only
	 * where there is none): a striped file's bound is the plain size that
	 * covers every object it may have.
	 */
	if (!store_file_layout_plain(ly))
		size = store_file_obj_end(ly, size) * ly->object_size;
	it = item_new(ino, ly->object_size, ly->pool_id, size, false);
	if (!it) {
		derr(CLIENT, "no memory to queue the purge of %" PRIx64 ": its objects stay", ino);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (p->stop) {
		pthread_mutex_unlock(&p->lock);
		free(it);
		derr(CLIENT, "purge of %" PRIx64 " queued after the purge thread stopped: its objects stay", ino);
		return;
	}
	append_locked(p, it);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}
