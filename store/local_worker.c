/*
 * local_worker.c - the worker thread and the submission side: submitters queue requests
 * under ls->lock and poke an eventfd (waiting for budget when
 * INFLIGHT_BUDGET is used up); the worker takes batches off the queue,
 * runs them (local_exec.c), reaps completions off the ring, takes and
 * lets go the effects lock, runs checkpoints, and flushes at close.
 *
 * Locks: ls->lock protects the queue, the budget and the sleeping and
 * stopping flags (held only for that bookkeeping, never across I/O);
 * everything else here belongs to the worker thread.  The blocking
 * queries (stat, omap get/list, list) wait for their completion in the
 * caller's thread, with no lock held.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <lmdb.h>
#include <sys/sdt.h>

#include "common/lockdep.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "common/uring_wait.h"
#include "store/local_int.h"

#define INFLIGHT_BUDGET (64ull << 20)
#define EFFECTS_SLICE_NS (4ull * 1000 * 1000)   /* the effects lock is kept this long before a waiter gets it */

/* ---- the worker ----------------------------------------------------- */

static void arm_event(struct local_store *ls)
{
	struct io_uring_sqe *sqe = local_get_sqe(ls);
	io_uring_prep_read(sqe, ls->evfd, &ls->evbuf, sizeof(ls->evbuf), 0);
	io_uring_sqe_set_data(sqe, &ls->ev_ctx);
}

static void reap(struct local_store *ls)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&ls->ring, &cqe) == 0) {
		struct uctx *u = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&ls->ring, cqe);
		switch (u->kind) {
		case U_EVENT:
			lg_uring_mark_defined(&ls->evbuf, sizeof(ls->evbuf));
			arm_event(ls);
			break;
		case U_FWORK:
			local_fwork_cqe(ls, container_of(u, struct fwork, u), res);
			break;
		case U_FSYNC:
			local_fsync_cqe(ls, container_of(u, struct fsync_ctx, u), res);
			break;
		}
	}
}

/* Caller holds ls->lock.  The next batch off the queue: up to BATCH_MAX_REQS
 * requests and BATCH_MAX_BYTES of payload (at least one request); NULL: empty. */
static struct lreq *take_batch_locked(struct local_store *ls)
{
	struct lreq *head = ls->q_head, *last = NULL, *req;
	size_t n = 0, bytes = 0;

	lockdep_assert_held(&ls->lock);
	for (req = head; req && n < BATCH_MAX_REQS && (n == 0 || bytes + req->charge <= BATCH_MAX_BYTES);
	     req = req->next) {
		n++;
		bytes += req->charge;
		last = req;
	}
	if (!last)
		return NULL;
	ls->q_head = last->next;
	if (!ls->q_head)
		ls->q_tail = &ls->q_head;
	last->next = NULL;
	ls->busy_reqs += (unsigned)n;
	return head;
}

/* A write txn of no ops: our owners record up to date, and what every owner synced deleted. */
static int publish_txn(struct local_store *ls)
{
	uint64_t lowest;
	MDB_txn *txn;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	r = local_txn_begin_shared(ls, txn);
	if (r == 0)
		r = local_txn_end_shared(ls, txn, 0, &lowest);
	if (r) {
		mdb_txn_abort(txn);
		return r;
	}
	r = mdb_err(mdb_txn_commit(txn));
	if (r == 0)
		local_txn_committed_shared(ls, lowest);
	return r;
}

/* The final flush at close: sync what is dirty; then none of our intents is pending. */
static void final_sync(struct local_store *ls)
{
	struct lfile *f;
	int err = 0;

	while ((f = ls->dirty)) {
		ls->dirty = f->dnext;
		f->dirty = false;
		if (f->fd >= 0 && !f->unlinked && fdatasync(f->fd) < 0)
			err = -errno;
		local_file_maybe_release(ls, f);
	}
	if (ls->dir_dirty && fsync(ls->objfd) < 0)
		err = -errno;
	if (err || atomic_load(&ls->broken) || ls->fifo_head)
		return;   /* our owners record stays: the next to take the effects lock redoes our intents */
	ls->my_lowest = UINT64_MAX;
	if (ls->my_lowest != ls->my_lowest_db)
		publish_txn(ls);
}

/* Does @batch touch object files (and so need LOCK_EFFECTS)? */
static bool batch_needs_effects(const struct lreq *batch)
{
	for (const struct lreq *req = batch; req; req = req->next)
		if (req->effects)
			return true;
	return false;
}

void *local_worker_main(void *arg)
{
	struct local_store *ls = arg;

	pthread_setname_np(pthread_self(), "store-local");
	arm_event(ls);
	io_uring_submit(&ls->ring);
	for (;;) {
		struct lreq *batch;
		bool stopping, idle, queued;

		reap(ls);
		pthread_mutex_lock(&ls->lock);
		/* draining for another process that waits for LOCK_EFFECTS: no new batch meanwhile */
		batch = ls->effects_yield ? NULL : take_batch_locked(ls);
		stopping = ls->stopping;
		queued = ls->q_head != NULL;
		pthread_mutex_unlock(&ls->lock);
		if (batch) {
			int r = 0;
			/* broken: its reads and writes of object data fail without touching the files */
			if (!ls->effects_held && !atomic_load(&ls->broken) && batch_needs_effects(batch))
				r = local_effects_acquire(ls);
			if (r)
				local_fail_batch(ls, batch, r);
			else
				local_run_batch(ls, batch);
			local_maybe_checkpoint(ls, false);
			io_uring_submit(&ls->ring);
			/* another process waits: let it in once our slice is used (then drain first) */
			if (ls->effects_held && now_mono_ns() - ls->effects_since_ns >= EFFECTS_SLICE_NS &&
			    local_effects_contended(ls))
				ls->effects_yield = true;
			continue;
		}
		/* a committed effect failed: once nothing of ours is in flight, let others redo ours */
		if (atomic_load(&ls->broken) && !ls->retired && ls->works_reqs == 0) {
			local_share_retire(ls);
			continue;
		}
		/* our file work drained: let LOCK_EFFECTS go when idle, or at once when someone waits */
		if (ls->effects_held && ls->works_reqs == 0 && (ls->effects_yield || !queued)) {
			local_effects_release(ls);
			continue;
		}
		idle = ls->busy_reqs == 0;
		local_maybe_checkpoint(ls, stopping && idle);
		/* parked files with nothing to checkpoint: the fds are held elsewhere, retry now and then */
		if (ls->blocked && !ls->ckpt_pending && now_mono_ns() - ls->blocked_retry_ns >= 10 * 1000 * 1000)
			local_unblock_all(ls);
		if (stopping && idle && !ls->ckpt_pending)
			break;
		if (idle && !ls->ckpt_pending && ls->my_lowest != ls->my_lowest_db)
			publish_txn(ls);   /* idle with synced intents: say so, delete them (one small commit) */

		/* nothing to take: wait for a completion, a submitter's poke or the checkpoint timer
		 * (when stopping or yielding, for the I/O still in flight) */
		bool sleep = false;
		pthread_mutex_lock(&ls->lock);
		if (!ls->q_head || ls->effects_yield)
			sleep = ls->sleeping = true;
		pthread_mutex_unlock(&ls->lock);
		io_uring_submit(&ls->ring);
		if (sleep) {
			if (ls->dirty || ls->dir_dirty || ls->blocked) {
				struct __kernel_timespec ts = { 0, (long long)(ls->blocked ? 10 * 1000 * 1000 : CKPT_INTERVAL_NS) };
				lg_uring_wait(&ls->ring, &ts);
			} else {
				lg_uring_wait(&ls->ring, NULL);
			}
			pthread_mutex_lock(&ls->lock);
			ls->sleeping = false;
			pthread_mutex_unlock(&ls->lock);
		}
	}
	if (ls->effects_held)
		local_effects_release(ls);
	final_sync(ls);
	dout(STORE, 5, "local store %s: %" PRIu64 " ops in %" PRIu64 " batches (%.1f per commit), %" PRIu64
	     " checkpoints", ls->path, ls->st_ops, ls->st_batches,
	     ls->st_batches ? (double)ls->st_ops / (double)ls->st_batches : 0.0, ls->st_ckpts);
	return NULL;
}

static int enqueue(struct local_store *ls, struct lreq *req)
{
	bool wake;
	int broken = atomic_load(&ls->broken);

	if (broken && req->kind == LR_WRITE)
		return broken;
	pthread_mutex_lock(&ls->lock);
	if (ls->stopping) {
		pthread_mutex_unlock(&ls->lock);
		return -ESHUTDOWN;
	}
	/* throttle, except the worker itself (callbacks): it would wait for itself */
	if (!pthread_equal(pthread_self(), ls->worker))
		while (ls->budget && ls->budget + req->charge > INFLIGHT_BUDGET)
			pthread_cond_wait(&ls->space, &ls->lock);
	ls->budget += req->charge;
	req->t0 = now_mono_ns();
	req->next = NULL;
	*ls->q_tail = req;
	ls->q_tail = &req->next;
	wake = ls->sleeping;
	ls->sleeping = false;
	pthread_mutex_unlock(&ls->lock);
	if (wake) {
		uint64_t one = 1;
		if (write(ls->evfd, &one, sizeof(one)) < 0)
			derr(STORE, "local store: eventfd write: %s", strerror(errno));
	}
	return 0;
}

static struct lreq *req_new(struct local_pool *lp, enum lreq_kind kind, const char *oid)
{
	struct lreq *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->kind = kind;
	req->pool = lp;
	if (oid && !(req->oid = strdup(oid))) {
		free(req);
		return NULL;
	}
	req->charge = sizeof(*req) + (oid ? strlen(oid) : 0);
	return req;
}

/* ---- backend operations --------------------------------------------- */

int local_op_submit(struct store_pool *p, const char *oid, struct store_op *op, store_cb_t cb, void *arg)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_WRITE, oid);
	int r;

	if (!req) {
		store_op_free(op);
		return -ENOMEM;
	}
	req->op = op;
	req->cb = cb;
	req->arg = arg;
	req->charge += op->bytes + op->n * sizeof(struct store_subop);
	for (size_t i = 0; i < op->n && !req->effects; i++) {
		enum store_subop_kind k = op->v[i].kind;
		req->effects = k == SOP_WRITE || k == SOP_WRITE_FULL || k == SOP_APPEND || k == SOP_TRUNCATE ||
			       k == SOP_ZERO || k == SOP_REMOVE || k == SOP_ALLOCATE;
	}
	req->grow = local_op_growth(op);
	r = enqueue(lp->ls, req);
	if (r) {
		store_op_free(op);
		free(req->oid);
		free(req);
	}
	return r;
}

int local_read_submit(struct store_pool *p, const char *oid, uint64_t off, size_t len, void *buf,
			     store_cb_t cb, void *arg)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_READ, oid);
	int r;

	if (!req)
		return -ENOMEM;
	if (len > INT_MAX)
		len = INT_MAX;
	req->effects = true;
	req->off = off;
	req->len = len;
	req->buf = buf;
	req->cb = cb;
	req->arg = arg;
	r = enqueue(lp->ls, req);
	if (r) {
		free(req->oid);
		free(req);
	}
	return r;
}

/* Run a query request in the worker (ordered after earlier writes) and wait. */
static int query_wait(struct local_pool *lp, struct lreq *req)
{
	struct store_completion *c = store_completion_new();
	int r;

	if (!c) {
		free(req->oid);
		free(req);
		return -ENOMEM;
	}
	req->cb = store_completion_cb;
	req->arg = c;
	r = enqueue(lp->ls, req);
	if (r) {
		free(req->oid);
		free(req);
		store_completion_free(c);
		return r;
	}
	return store_completion_wait(c);
}

int local_stat(struct store_pool *p, const char *oid, struct store_stat *st)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_STAT, oid);

	if (!req)
		return -ENOMEM;
	req->st_out = st;
	return query_wait(lp, req);
}

int local_omap_get(struct store_pool *p, const char *oid, const char *key, void **val, size_t *len)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_OMAP_GET, oid);

	if (!req)
		return -ENOMEM;
	req->key = key;
	req->val = val;
	req->vlen = len;
	return query_wait(lp, req);
}

int local_omap_list(struct store_pool *p, const char *oid, const char *after, const char *prefix,
			   size_t max, struct store_kv **out, size_t *n, bool *more)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_OMAP_LIST, oid);

	if (!req)
		return -ENOMEM;
	req->after = after;
	req->prefix = prefix;
	req->max = max;
	req->kvs = out;
	req->nkv = n;
	req->more = more;
	return query_wait(lp, req);
}

int local_list_objects(struct store_pool *p, char ***names, size_t *n)
{
	struct local_pool *lp = LP(p);
	struct lreq *req = req_new(lp, LR_LIST, NULL);

	if (!req)
		return -ENOMEM;
	req->names = names;
	req->nkv = n;
	return query_wait(lp, req);
}
