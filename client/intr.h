/*
 * intr.h - private to client/: interruptible waits for the MDS (the public
 * side, struct lc_intr, is in client.h).  mds_client.c calls these around
 * a wait on a request's condition variable.
 *
 * Lock order: lc_intr->lock -> the waited-on lock (the request's).  The
 * waiter registers and unregisters without holding its lock; lc_intr_fire
 * takes the intr lock, then the waiter's lock, and broadcasts.  The waiter
 * tests lc_intr_fired() under its lock, so a fire is never missed.
 */
#ifndef LOLIGO_CLIENT_INTR_H
#define LOLIGO_CLIENT_INTR_H

#include <pthread.h>
#include <stdbool.h>

#include "client/client.h"

/* How long a wait lasts before the frontend is asked to arm (most replies come sooner). */
#define LC_INTR_ARM_NS 20000000ull

/** lc_intr_current - the calling thread's lc_intr, or NULL. */
struct lc_intr *lc_intr_current(void);
/**
 * lc_intr_watch - a wait on @cond/@lock is about to block for a while:
 * arm the frontend (first time) and let lc_intr_fire() wake it.  Call
 * without @lock held.
 */
void lc_intr_watch(struct lc_intr *it, pthread_mutex_t *lock, pthread_cond_t *cond);
/** lc_intr_unwatch - the wait is over (call without its lock held). */
void lc_intr_unwatch(struct lc_intr *it);

static inline bool lc_intr_fired(struct lc_intr *it)
{
	return it && atomic_load(&it->fired);
}

#endif
