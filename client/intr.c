/*
 * intr.c - interruptible waits for the MDS (see client.h for the contract
 * and intr.h for the locking).  The token lives on the frontend's stack
 * for the duration of one call; the thread-local pointer is how the waits
 * deep in the session layer find it without every lc_* signature taking it.
 */
#include <string.h>

#include "client/intr.h"

static __thread struct lc_intr *cur;

void lc_intr_begin(struct lc_intr *it, void (*arm)(struct lc_intr *), void (*disarm)(struct lc_intr *), void *arg)
{
	it->arm = arm;
	it->disarm = disarm;
	it->arg = arg;
	pthread_mutex_init(&it->lock, NULL);
	atomic_init(&it->fired, false);
	it->armed = false;
	it->wait_lock = NULL;
	it->wait_cond = NULL;
	cur = it;
}

void lc_intr_end(struct lc_intr *it)
{
	if (cur == it)
		cur = NULL;
	/* after disarm no lc_intr_fire() runs any more (the frontend's promise) */
	if (it->armed && it->disarm)
		it->disarm(it);
	pthread_mutex_destroy(&it->lock);
}

void lc_intr_fire(struct lc_intr *it)
{
	atomic_store(&it->fired, true);
	pthread_mutex_lock(&it->lock);
	if (it->wait_lock) {
		pthread_mutex_lock(it->wait_lock);
		pthread_cond_broadcast(it->wait_cond);
		pthread_mutex_unlock(it->wait_lock);
	}
	pthread_mutex_unlock(&it->lock);
}

struct lc_intr *lc_intr_current(void)
{
	return cur;
}

void lc_intr_watch(struct lc_intr *it, pthread_mutex_t *lock, pthread_cond_t *cond)
{
	bool arm;

	pthread_mutex_lock(&it->lock);
	it->wait_lock = lock;
	it->wait_cond = cond;
	pthread_mutex_unlock(&it->lock);
	arm = !it->armed;
	it->armed = true;
	/* may call lc_intr_fire() right away (the interrupt came first) */
	if (arm && it->arm)
		it->arm(it);
}

void lc_intr_unwatch(struct lc_intr *it)
{
	pthread_mutex_lock(&it->lock);
	it->wait_lock = NULL;
	it->wait_cond = NULL;
	pthread_mutex_unlock(&it->lock);
}
