/*
 * inval.c - deliver the client library's invalidations to the kernel.
 *
 * libloligo-client calls lc_callbacks when a cap revoke or a change seen from
 * the MDS makes the kernel's dentry, attribute or page cache stale, and when
 * the NFS gateway beside us (nfs_hook.c) changed something through it (the
 * library tells the registered frontend of the others' changes: .who).  Those
 * calls come from the client's own threads (the MDS reader, the cap worker),
 * possibly with client locks held, from the gateway's, and sometimes from
 * inside a FUSE request the kernel is waiting on.  fuse_lowlevel_notify_inval_* write to /dev/fuse
 * and the kernel may block them on the very inode lock that request holds,
 * so they are never called there: the callbacks only queue the work, and one
 * thread of our own delivers it, the way libfuse's passthrough_hp and
 * ceph-fuse's async invalidators do.
 *
 * A revoke is acked once its invalidations have reached the kernel (the
 * inval_wait callback), so the client whose change caused it cannot find
 * this mount's kernel still caching the old state.  The wait is bounded
 * (caps.c): the kernel may block a name's invalidation on a directory lock
 * held by a FUSE request of ours that itself waits at the MDS for another
 * client's ack, which may wait for ours.  So names and inodes go through
 * two queues, each with its thread: an inode's invalidation (attributes,
 * pages) never waits behind a name's stuck on a directory lock, and a
 * revoke of a file's caps waits for the inode queue only.
 *
 * Node ids: an inode the kernel knows carries our reference, so it is in the
 * client's cache; lc_ino_to_inode() finding nothing means the kernel has
 * nothing to drop.  The kernel answers -ENOENT for node ids (and names) it
 * does not hold, which is harmless when it forgot them, but not when our
 * reply handing them out is still on its way: a FUSE worker computed a long
 * timeout from caps that a revoke took right after, and the kernel takes
 * the reply (in the requester's context, after our write returned) after
 * it refused the revoke's invalidation, then caches the old state for the
 * whole timeout (test_fuse_caps saw a size 0 long after the other mount's
 * fsync).  Such a promise is stamped before the caps are looked at
 * (lc_kernel_promise_ns), so an invalidation refused within RETRY_WINDOW of
 * that stamp goes to the queue's retry list and is delivered again, with
 * backoff, until the kernel takes it or the window is over; the kernel's
 * attr_version then drops the attributes any other reply in flight brings.
 * A revoke's wait (inval_wait) waits for the retries of what it queued.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/fuse/lfuse.h"
#include "common/lockdep.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

struct inval_item {
	struct inval_item *next;
	bool entry;          /* inval_entry (parent + name), else inval_inode */
	uint64_t ino;        /* inode, or the parent directory */
	off_t off, len;
	uint64_t seq;        /* the queue's count when it was queued: 1, 2, ... */
	uint64_t due_ns;     /* on the retry list: when to try again */
	uint64_t queued_ns;  /* mono ns it was queued */
	unsigned tries;
	char name[];
};

/* an invalidation the kernel refused (-ENOENT) is tried again while a
 * promise of ours about its node is younger than this */
#define RETRY_WINDOW_NS (1000 * 1000000ull)
#define RETRY_FIRST_NS (1 * 1000000ull)
#define RETRY_MAX_NS (16 * 1000000ull)

/* one queue and the thread that delivers it: Q_INODE or Q_ENTRY */
enum { Q_INODE, Q_ENTRY, NQ };

struct inval_queue {
	struct lfuse_inval *iv;
	pthread_t thread;
	bool started;
	pthread_cond_t cond;        /* with iv->lock: items queued, or stop */
	/* protected by iv->lock: */
	struct inval_item *head, **tail;   /* queued, in seq order */
	struct inval_item *retry, **rtail; /* refused, tried again: in seq order */
	uint64_t queued;            /* seq of the last item queued */
	uint64_t taken;             /* seq of the last item taken off the queue and tried */
	uint64_t done;              /* every item up to this seq is delivered (or given up) */
};

struct lfuse_inval {
	struct lfuse *lf;
	pthread_mutex_t lock;       /* protects everything below and in q[] */
	pthread_cond_t done_cond;   /* a delivered count moved */
	bool running;               /* false: enqueue drops, the threads exit */
	unsigned long dropped;
	struct inval_queue q[NQ];
};

static void enqueue(struct lfuse_inval *iv, struct inval_item *it)
{
	struct inval_queue *q = &iv->q[it->entry ? Q_ENTRY : Q_INODE];

	pthread_mutex_lock(&iv->lock);
	if (!iv->running) {
		iv->dropped++;
		pthread_mutex_unlock(&iv->lock);
		free(it);
		return;
	}
	it->next = NULL;
	it->queued_ns = now_mono_ns();
	it->seq = ++q->queued;
	*q->tail = it;
	q->tail = &it->next;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&iv->lock);
}

static void cb_inval_inode(void *arg, uint64_t ino, off_t off, off_t len)
{
	struct lfuse *lf = arg;
	struct inval_item *it;

	if (!lf->inval)
		return;
	it = calloc(1, sizeof(*it) + 1);
	if (!it)
		return; /* the attribute timeout still bounds staleness */
	it->ino = ino;
	it->off = off;
	it->len = len;
	enqueue(lf->inval, it);
}

static void cb_inval_dentry(void *arg, uint64_t parent_ino, const char *name)
{
	struct lfuse *lf = arg;
	struct inval_item *it;
	size_t n = strlen(name);

	if (!lf->inval)
		return;
	it = calloc(1, sizeof(*it) + n + 1);
	if (!it)
		return;
	it->entry = true;
	it->ino = parent_ino;
	memcpy(it->name, name, n + 1);
	enqueue(lf->inval, it);
}

static void cb_inval_wait(void *arg, int timeout_ms, bool names)
{
	struct lfuse *lf = arg;
	struct lfuse_inval *iv = lf->inval;
	struct timespec dl;
	uint64_t target[NQ];

	if (!iv)
		return;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&iv->lock);
	for (int i = 0; i < NQ; i++)
		target[i] = iv->q[i].queued;
	while (iv->running && (iv->q[Q_INODE].done < target[Q_INODE] ||
			       (names && iv->q[Q_ENTRY].done < target[Q_ENTRY])))
		if (pthread_cond_timedwait(&iv->done_cond, &iv->lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&iv->lock);
}

const struct lc_callbacks lfuse_inval_callbacks = {
	.who = "fuse",       /* LFUSE_TRACK's: FUSE's own changes are the kernel's already */
	.inval_inode = cb_inval_inode,
	.inval_dentry = cb_inval_dentry,
	.inval_wait = cb_inval_wait,
};

/*
 * Deliver @it to the kernel.  Return: true if the kernel refused it for a
 * node (or name) it does not hold while a reply of ours promising it may
 * still be on its way (the caller tries again later).
 */
static bool deliver(struct lfuse *lf, const struct inval_item *it)
{
	struct lc_inode *in;
	fuse_ino_t nodeid;
	bool again = false;
	int r;

	if (it->ino == lf->root_ino) {
		in = NULL;
		nodeid = FUSE_ROOT_ID;
	} else {
		in = lc_ino_to_inode(lf->c, it->ino);
		if (!in)
			return false; /* not cached: the kernel cannot hold it either */
		nodeid = lfuse_nodeid(lf, in);
	}
	/*
	 * Attributes only.  The kernel drops an attribute reply that an
	 * invalidation of its inode overtook (attr_version), and the request
	 * goes on with what it had: a read right after another client's
	 * change then used the size cached before it (a file the other client
	 * had just written read as empty: test_fuse_caps
	 * test_async_unlink_open_elsewhere, once revokes ran on threads of
	 * their own).  So while such a reply is on its way the invalidation
	 * waits (a few ms, bounded: the reply may wait at the MDS for the very
	 * ack this invalidation holds up), and once the kernel has been handed
	 * attributes computed after it was queued (their timeout from the caps
	 * as they are now), it has nothing older to drop; nor has it when no
	 * attribute timeout it was given is still running.
	 */
	if (!it->entry && it->off < 0 && in) {
		if (!lc_kernel_attrs_cached(in)) {
			/* every timeout it was given has run out (or none was):
			 * it caches nothing of them to drop */
			perf_inc(&lf->perf.inval_skipped, 1);
			lc_put(lf->c, in);
			return false;
		}
		if (lc_kernel_replying(in) && it->tries < 6) {
			lc_put(lf->c, in);
			return true;
		}
		if (lc_kernel_promise_ns(in) > it->queued_ns) {
			perf_inc(&lf->perf.inval_skipped, 1);
			lc_put(lf->c, in);
			return false;
		}
	}
	if (it->entry) {
		r = fuse_lowlevel_notify_inval_entry(lf->se, nodeid, it->name, strlen(it->name));
	} else {
		double delay = cfg_double(CFG_fuse_debug_inval_delay);

		if (delay > 0) {
			struct timespec ts = { .tv_sec = (time_t)delay,
					       .tv_nsec = (long)((delay - (double)(time_t)delay) * 1e9) };
			nanosleep(&ts, NULL);
		}
		r = fuse_lowlevel_notify_inval_inode(lf->se, nodeid, it->off, it->len);
	}
	if (r == -ENOENT) {
		uint64_t promised = lc_kernel_promise_ns(in ? in : lf->root), now = now_mono_ns();

		/* bounded by the item's own age too: promises made since (the
		 * kernel asking again and again) must not keep it alive */
		again = promised && mono_since(now, promised) < RETRY_WINDOW_NS &&
			mono_since(now, it->queued_ns) < RETRY_WINDOW_NS &&
			/* it was handed to the kernel and not forgotten: our reply
			 * is on its way; else it forgot the node, for good */
			(!in || lc_kernel_knows(in));
	}
	if (again)
		perf_inc(&lf->perf.inval_retried, 1);
	else if (r < 0 && r != -ENOENT)
		perf_inc(&lf->perf.inval_failed, 1);
	else if (it->entry)
		perf_inc(&lf->perf.inval_entry, 1);
	else
		perf_inc(&lf->perf.inval_inode, 1);
	if (r < 0 && r != -ENOENT)
		dout(FUSE, 5, "inval %s ino 0x%llx%s%s: %s", it->entry ? "entry" : "inode",
		     (unsigned long long)it->ino, it->entry ? " name " : "", it->entry ? it->name : "",
		     strerror(-r));
	else
		dout(FUSE, 15, "inval %s ino 0x%llx %s", it->entry ? "entry" : "inode",
		     (unsigned long long)it->ino, it->entry ? it->name : "");
	if (in)
		lc_put(lf->c, in);
	return again;
}

/* iv->lock held: @q->done from what was tried and what waits for a retry */
static void update_done_locked(struct inval_queue *q)
{
	uint64_t d = q->taken;

	lockdep_assert_held(&q->iv->lock);
	if (q->retry && q->retry->seq - 1 < d)
		d = q->retry->seq - 1;
	if (d > q->done) {
		q->done = d;
		pthread_cond_broadcast(&q->iv->done_cond);
	}
}

/*
 * Try @list (in seq order); what the kernel refused too early goes to
 * *@again (in the same order) with its next due time.  Returns the seq of
 * the last item tried, 0 for an empty list.
 */
static uint64_t deliver_list(struct lfuse *lf, struct inval_item *list, struct inval_item ***again)
{
	uint64_t last = 0;

	while (list) {
		struct inval_item *it = list;

		list = it->next;
		last = it->seq;
		if (deliver(lf, it)) {
			uint64_t backoff = RETRY_FIRST_NS << (it->tries < 4 ? it->tries : 4);

			it->tries++;
			it->due_ns = now_mono_ns() + (backoff < RETRY_MAX_NS ? backoff : RETRY_MAX_NS);
			it->next = NULL;
			**again = it;
			*again = &it->next;
		} else {
			free(it);
		}
	}
	return last;
}

static void *inval_main(void *arg)
{
	struct inval_queue *q = arg;
	struct lfuse_inval *iv = q->iv;

	pthread_mutex_lock(&iv->lock);
	for (;;) {
		uint64_t now = now_mono_ns();

		while (iv->running && !q->head && !(q->retry && q->retry->due_ns <= now)) {
			if (q->retry) {
				struct timespec ts = ns_to_timespec(q->retry->due_ns);

				pthread_cond_timedwait(&q->cond, &iv->lock, &ts);
			} else {
				pthread_cond_wait(&q->cond, &iv->lock);
			}
			now = now_mono_ns();
		}
		if (!iv->running)
			break;
		/* the retries first (they are older), then everything queued */
		struct inval_item *retries = NULL, *batch = q->head, *again = NULL, **atail = &again;

		if (q->retry && q->retry->due_ns <= now) {
			retries = q->retry;
			q->retry = NULL;
			q->rtail = &q->retry;
		}
		q->head = NULL;
		q->tail = &q->head;
		pthread_mutex_unlock(&iv->lock);
		deliver_list(iv->lf, retries, &atail);
		uint64_t last = deliver_list(iv->lf, batch, &atail);
		pthread_mutex_lock(&iv->lock);
		if (last)
			q->taken = last;
		/* after what still waits on the list (smaller seqs, or none:
		 * then retries, taken off it, lead again) */
		if (again) {
			*q->rtail = again;
			q->rtail = atail;
		}
		update_done_locked(q);
	}
	pthread_mutex_unlock(&iv->lock);
	return NULL;
}

/*
 * A direct write (O_DIRECT, or a handle without Fc) goes around the
 * kernel's page cache, which other handles of the inode on this mount may
 * hold: their buffered reads refill it while the write is on its way, and
 * for an asynchronous O_DIRECT write (io_submit, io_uring) the kernel
 * invalidates nothing after the write completes (generic_file_direct_write
 * does so only for synchronous ones).  The range is dropped here, after the
 * store has the bytes and before the write is answered: a read that filled
 * a page from the store before the write landed still holds the page
 * locked until its reply, and the invalidation waits for that lock; a read
 * that starts after it reads the new bytes.  So nothing read before the
 * write completed can be served after it.  Not through the queue: the
 * invalidation must reach the kernel before the reply, and the queue's
 * thread may be held up by another inode's.
 */
void lfuse_inval_written(struct lfuse *lf, fuse_ino_t nodeid, off_t off, off_t len)
{
	int r = fuse_lowlevel_notify_inval_inode(lf->se, nodeid, off, len);

	if (r == 0)
		perf_inc(&lf->perf.inval_inode, 1);
	else if (r != -ENOENT)
		dout(FUSE, 5, "inval after a direct write of node 0x%llx: %s", (unsigned long long)nodeid,
		     strerror(-r));
}

void lfuse_inval_drain(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;

	if (!iv)
		return;
	for (int i = 0; i < NQ; i++) {
		struct inval_queue *q = &iv->q[i];
		struct inval_item *batch, *again = NULL, **atail = &again;
		uint64_t last;

		pthread_mutex_lock(&iv->lock);
		batch = iv->running ? q->head : NULL;
		if (batch) {
			q->head = NULL;
			q->tail = &q->head;
		}
		pthread_mutex_unlock(&iv->lock);
		last = deliver_list(lf, batch, &atail);
		pthread_mutex_lock(&iv->lock);
		if (last > q->taken)
			q->taken = last;
		if (again) {    /* the queue's thread tries them again */
			*q->rtail = again;
			q->rtail = atail;
			pthread_cond_signal(&q->cond);
		}
		update_done_locked(q);
		pthread_mutex_unlock(&iv->lock);
	}
}

static void stop_threads(struct lfuse_inval *iv)
{
	pthread_mutex_lock(&iv->lock);
	iv->running = false;
	for (int i = 0; i < NQ; i++)
		pthread_cond_signal(&iv->q[i].cond);
	pthread_cond_broadcast(&iv->done_cond);
	pthread_mutex_unlock(&iv->lock);
	for (int i = 0; i < NQ; i++)
		if (iv->q[i].started) {
			pthread_join(iv->q[i].thread, NULL);
			iv->q[i].started = false;
		}
}

static void destroy(struct lfuse_inval *iv)
{
	pthread_mutex_destroy(&iv->lock);
	for (int i = 0; i < NQ; i++)
		pthread_cond_destroy(&iv->q[i].cond);
	pthread_cond_destroy(&iv->done_cond);
	free(iv);
}

int lfuse_inval_start(struct lfuse *lf)
{
	static const char *names[NQ] = { "fuse-inval", "fuse-inval-name" };
	struct lfuse_inval *iv = calloc(1, sizeof(*iv));
	pthread_condattr_t ca;
	int r = 0;

	if (!iv)
		return -ENOMEM;
	iv->lf = lf;
	iv->running = true;
	pthread_mutex_init(&iv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&iv->done_cond, &ca);
	for (int i = 0; i < NQ; i++) {
		iv->q[i].iv = iv;
		iv->q[i].tail = &iv->q[i].head;
		iv->q[i].rtail = &iv->q[i].retry;
		/* monotonic, as the retry wait's deadline (with the default clock
		 * that wait timed out at once: the thread spun while a retry was
		 * pending, a whole core for as long as a promise kept it there) */
		pthread_cond_init(&iv->q[i].cond, &ca);
	}
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < NQ && !r; i++) {
		r = pthread_create(&iv->q[i].thread, NULL, inval_main, &iv->q[i]);
		if (!r) {
			iv->q[i].started = true;
			pthread_setname_np(iv->q[i].thread, names[i]);
		}
	}
	if (r) {
		stop_threads(iv);
		destroy(iv);
		return -r;
	}
	lf->inval = iv;
	return 0;
}

void lfuse_inval_stop(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;

	if (!iv)
		return;
	stop_threads(iv);
	/* Callbacks may still come until the client is unmounted: keep the
	 * (stopped) queues around; enqueue drops.  Free what is pending. */
	pthread_mutex_lock(&iv->lock);
	for (int i = 0; i < NQ; i++) {
		struct inval_queue *q = &iv->q[i];

		while (q->head) {
			struct inval_item *it = q->head;
			q->head = it->next;
			free(it);
		}
		q->tail = &q->head;
		while (q->retry) {
			struct inval_item *it = q->retry;
			q->retry = it->next;
			free(it);
		}
		q->rtail = &q->retry;
	}
	pthread_mutex_unlock(&iv->lock);
}

void lfuse_inval_free(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;

	if (!iv)
		return;
	lf->inval = NULL;
	destroy(iv);
}
