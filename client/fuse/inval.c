/*
 * inval.c - deliver the client library's invalidations to the kernel.
 *
 * libloligo-client calls lc_callbacks when a cap revoke or a change seen from
 * the MDS makes the kernel's dentry, attribute or page cache stale.  Those
 * calls come from the client's own threads (the MDS reader, the cap worker),
 * possibly with client locks held, and sometimes from inside a FUSE request
 * the kernel is waiting on.  fuse_lowlevel_notify_inval_* write to /dev/fuse
 * and the kernel may block them on the very inode lock that request holds,
 * so they are never called there: the callbacks only queue the work, and one
 * thread of our own delivers it, the way libfuse's passthrough_hp and
 * ceph-fuse's async invalidators do.
 *
 * A revoke is acked once its invalidations have reached the kernel (the
 * inval_wait callback), so the client whose change caused it cannot find
 * this mount's kernel still caching the old state.  The wait is bounded
 * (REVOKE_INVAL_WAIT_MS): the kernel may block an invalidation on a
 * directory lock held by a FUSE request of ours that itself waits at the
 * MDS for another client's ack, which may wait for ours.
 *
 * Node ids: an inode the kernel knows carries our reference, so it is in the
 * client's cache; lc_ino_to_inode() finding nothing means the kernel has
 * nothing to drop.  The kernel answers -ENOENT for node ids it already
 * forgot, which is harmless.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/fuse/lfuse.h"
#include "common/log.h"

struct inval_item {
	struct inval_item *next;
	bool entry;          /* inval_entry (parent + name), else inval_inode */
	uint64_t ino;        /* inode, or the parent directory */
	off_t off, len;
	char name[];
};

struct lfuse_inval {
	struct lfuse *lf;
	pthread_t thread;
	pthread_mutex_t lock;       /* protects everything below */
	pthread_cond_t cond;
	pthread_cond_t done_cond;   /* delivered moved */
	struct inval_item *head, **tail;
	bool running;               /* false: enqueue drops, the thread exits */
	unsigned long queued, dropped, delivered;
};

static void enqueue(struct lfuse_inval *iv, struct inval_item *it)
{
	pthread_mutex_lock(&iv->lock);
	if (!iv->running) {
		iv->dropped++;
		pthread_mutex_unlock(&iv->lock);
		free(it);
		return;
	}
	it->next = NULL;
	*iv->tail = it;
	iv->tail = &it->next;
	iv->queued++;
	pthread_cond_signal(&iv->cond);
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

static void cb_inval_wait(void *arg, int timeout_ms)
{
	struct lfuse *lf = arg;
	struct lfuse_inval *iv = lf->inval;
	struct timespec dl;
	unsigned long target;

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
	target = iv->queued;
	while (iv->running && iv->delivered < target)
		if (pthread_cond_timedwait(&iv->done_cond, &iv->lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&iv->lock);
}

const struct lc_callbacks lfuse_inval_callbacks = {
	.inval_inode = cb_inval_inode,
	.inval_dentry = cb_inval_dentry,
	.inval_wait = cb_inval_wait,
};

static void deliver(struct lfuse *lf, const struct inval_item *it)
{
	struct lc_inode *in;
	fuse_ino_t nodeid;
	int r;

	if (it->ino == lf->root_ino) {
		in = NULL;
		nodeid = FUSE_ROOT_ID;
	} else {
		in = lc_ino_to_inode(lf->c, it->ino);
		if (!in)
			return; /* not cached: the kernel cannot hold it either */
		nodeid = lfuse_nodeid(lf, in);
	}
	if (it->entry)
		r = fuse_lowlevel_notify_inval_entry(lf->se, nodeid, it->name, strlen(it->name));
	else
		r = fuse_lowlevel_notify_inval_inode(lf->se, nodeid, it->off, it->len);
	if (r < 0 && r != -ENOENT)
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
}

static void *inval_main(void *arg)
{
	struct lfuse_inval *iv = arg;

	pthread_mutex_lock(&iv->lock);
	for (;;) {
		while (iv->running && !iv->head)
			pthread_cond_wait(&iv->cond, &iv->lock);
		if (!iv->running)
			break;
		struct inval_item *batch = iv->head;
		iv->head = NULL;
		iv->tail = &iv->head;
		pthread_mutex_unlock(&iv->lock);
		unsigned long n = 0;
		while (batch) {
			struct inval_item *it = batch;
			batch = it->next;
			deliver(iv->lf, it);
			free(it);
			n++;
		}
		pthread_mutex_lock(&iv->lock);
		iv->delivered += n;
		pthread_cond_broadcast(&iv->done_cond);
	}
	pthread_mutex_unlock(&iv->lock);
	return NULL;
}

void lfuse_inval_drain(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;
	struct inval_item *batch;

	if (!iv)
		return;
	pthread_mutex_lock(&iv->lock);
	batch = iv->running ? iv->head : NULL;
	if (batch) {
		iv->head = NULL;
		iv->tail = &iv->head;
	}
	pthread_mutex_unlock(&iv->lock);
	while (batch) {
		struct inval_item *it = batch;
		batch = it->next;
		deliver(lf, it);
		free(it);
	}
}

int lfuse_inval_start(struct lfuse *lf)
{
	struct lfuse_inval *iv = calloc(1, sizeof(*iv));
	int r;

	if (!iv)
		return -ENOMEM;
	iv->lf = lf;
	iv->tail = &iv->head;
	iv->running = true;
	pthread_mutex_init(&iv->lock, NULL);
	pthread_cond_init(&iv->cond, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&iv->done_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	r = pthread_create(&iv->thread, NULL, inval_main, iv);
	if (r) {
		pthread_mutex_destroy(&iv->lock);
		pthread_cond_destroy(&iv->cond);
		pthread_cond_destroy(&iv->done_cond);
		free(iv);
		return -r;
	}
	pthread_setname_np(iv->thread, "fuse-inval");
	lf->inval = iv;
	return 0;
}

void lfuse_inval_stop(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;

	if (!iv)
		return;
	pthread_mutex_lock(&iv->lock);
	iv->running = false;
	pthread_cond_signal(&iv->cond);
	pthread_cond_broadcast(&iv->done_cond);
	pthread_mutex_unlock(&iv->lock);
	pthread_join(iv->thread, NULL);
	/* Callbacks may still come until the client is unmounted: keep the
	 * (stopped) queue around; enqueue drops.  Free what is pending. */
	pthread_mutex_lock(&iv->lock);
	while (iv->head) {
		struct inval_item *it = iv->head;
		iv->head = it->next;
		free(it);
	}
	iv->tail = &iv->head;
	pthread_mutex_unlock(&iv->lock);
}

void lfuse_inval_free(struct lfuse *lf)
{
	struct lfuse_inval *iv = lf->inval;

	if (!iv)
		return;
	lf->inval = NULL;
	pthread_mutex_destroy(&iv->lock);
	pthread_cond_destroy(&iv->cond);
	pthread_cond_destroy(&iv->done_cond);
	free(iv);
}
