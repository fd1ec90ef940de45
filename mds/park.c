/*
 * park.c - requests parked until the revokes they need are acked.
 *
 * An op that finds caps or leases to revoke returns LOCKER_WAIT before it
 * changes anything; its request is parked here (struct mwaiter) with the
 * bits it waits for counted in the inodes' and dentries' gathers (so that
 * nobody is granted them meanwhile), and the reader thread goes on reading.
 * An ack, release or session loss marks the waiters of that inode ready,
 * and locker_run_waiters() runs them again from the start through
 * locker_ops.request_resume (Ceph's C_MDS_RetryRequest).  Runs under
 * mds->lock except locker_run_waiters(), which takes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/locker.h"
#include "mds/locker_priv.h"
#include "mds/mdcache.h"
#include "mds/net.h"


/* ---- waiters ------------------------------------------------------------------ */

struct mdentry *locker_dentry_at(struct mds *m, uint64_t dir, const char *name)
{
	struct mdir *d;

	rcu_read_lock();
	d = xa_load(&m->dirs, dir);
	rcu_read_unlock();
	return d ? mdir_lookup(d, name) : NULL;
}

struct minode *locker_inode_at(struct mds *m, uint64_t ino)
{
	struct minode *in;

	rcu_read_lock();
	in = xa_load(&m->inodes, ino);
	rcu_read_unlock();
	return in;
}

void locker_gather_add(struct txn *t, uint64_t ino, uint32_t mask, const char *name)
{
	struct locker_gather *g = &t->g;
	int i;

	for (i = 0; i < g->n; i++)
		if (g->e[i].ino == ino && !g->e[i].name == !name && (!name || !strcmp(g->e[i].name, name))) {
			g->e[i].mask |= mask;
			return;
		}
	if (g->n == LOCKER_GATHER_MAX) {
		g->overflow = true;
		return;
	}
	g->e[g->n].ino = ino;
	g->e[g->n].mask = mask;
	g->e[g->n].name = name ? strdup(name) : NULL;
	if (name && !g->e[g->n].name) {
		g->overflow = true;
		return;
	}
	g->n++;
}

/* Count (@delta +1) or uncount (-1) the gathers of @g on their inodes and dentries. */
static void gather_refs(struct mds *m, struct locker_gather *g, int delta)
{
	int i, b;

	for (i = 0; i < g->n; i++) {
		if (g->e[i].name) {
			struct mdentry *dn = locker_dentry_at(m, g->e[i].ino, g->e[i].name);

			if (!dn)
				continue;
			if (delta > 0)
				dn->gather++;
			else if (dn->gather)
				dn->gather--;
			continue;
		}
		struct minode *in = locker_inode_at(m, g->e[i].ino);
		bool any = false;

		if (!in)
			continue;
		if (!in->gather) {
			if (delta < 0)
				continue;
			in->gather = calloc(1, sizeof(*in->gather));
			if (!in->gather)
				continue;
		}
		for (b = 0; b < NBITS; b++) {
			if (g->e[i].mask & (1u << b)) {
				if (delta > 0)
					in->gather->cnt[b]++;
				else if (in->gather->cnt[b])
					in->gather->cnt[b]--;
			}
			if (in->gather->cnt[b])
				any = true;
		}
		if (!any) {
			free(in->gather);
			in->gather = NULL;
		}
	}
}

void locker_gather_free(struct locker_gather *g)
{
	int i;

	for (i = 0; i < g->n; i++)
		free(g->e[i].name);
	g->n = 0;
	g->overflow = false;
}

void locker_gather_release(struct mds *m, struct txn *t)
{
	struct mwaiter *w = t->g.w;

	if (!w)
		return;
	gather_refs(m, &w->g, -1);
	locker_gather_free(&w->g);
}

int locker_blocked(struct txn *t)
{
	return t->g.n || t->g.overflow ? LOCKER_WAIT : 0;
}

struct mwaiter *locker_park(struct mds *m, struct conn *c, struct mdsp_msg *msg, uint64_t t0, struct txn *t)
{
	struct mwaiter *w = t->g.w;

	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			/* cannot wait: the client retries after its reconnect */
			derr(MDS, "no memory to park a request of %s", c->peer);
			locker_gather_free(&t->g);
			return NULL;
		}
		conn_get(c);
		w->conn = c;
		w->sid = t->s ? t->s->id : 0;
		w->t0 = t0;
		w->parked_ns = now_mono_ns();
		w->msg = *msg;
		memset(&msg->request, 0, sizeof(msg->request));
		perf_inc(&locker_c_parked, 1);
	}
	/* take the new gathers before dropping the old: nothing slips in */
	gather_refs(m, &t->g, +1);
	gather_refs(m, &w->g, -1);
	locker_gather_free(&w->g);
	w->g = t->g;
	w->g.w = NULL;
	memset(&t->g, 0, sizeof(t->g));
	w->ready = false;
	w->next = NULL;
	w->queued = true;
	*m->waiters_tail = w;
	m->waiters_tail = &w->next;
	m->nwaiters++;
	if (w->msg.type != MDSP_MSG_CAPS)
		dout(MDS, 10, "parked %s tid %" PRIu64 " of session %" PRIu64 " (%d gathers)",
		     mdsp_op_name(w->msg.request.op), w->msg.request.tid, w->sid, w->g.n);
	return w;
}

/* ---- a session's resent requests, in order ---------------------------------------
 *
 * A client resends what a lost connection or a restarted MDS may not have
 * run (REPLAY, RETRY) in the order it first sent it, and an unlink then a
 * create of the same name only mean the same thing in that order.  Parked
 * requests run again in the order they become ready, and the reader goes on
 * with the requests behind a parked one, so a parked resend is kept at the
 * head of its session's ordered list, and every later request of the
 * session joins the list behind it until the list is empty.  Only a
 * resend starts a list: the normal path is not serialized.
 */

bool locker_order_blocked(const struct session *s, uint64_t seq)
{
	const struct mwaiter *w;

	/* (those of a connection the session left are dropped with it, and
	 * their requests come again on the new one) */
	for (w = s->ordered; w; w = w->order_next)
		if (w->seq < seq && w->conn == s->conn)
			return true;
	return false;
}

bool locker_order_holds_replay(const struct session *s)
{
	const struct mwaiter *w;

	for (w = s->ordered; w; w = w->order_next)
		if (w->conn == s->conn && w->msg.type == MDSP_MSG_REQUEST && (w->msg.request.flags & MDSP_REQ_REPLAY))
			return true;
	return false;
}

void locker_order_add(struct session *s, struct mwaiter *w)
{
	struct mwaiter **pp = &s->ordered;

	if (w->ordered)
		return;
	while (*pp && (*pp)->seq < w->seq)
		pp = &(*pp)->order_next;
	w->order_next = *pp;
	*pp = w;
	w->ordered = true;
	perf_inc(&locker_c_ordered, 1);
}

/* @w leaves its session's list: the ones behind it may run now. */
static void order_del(struct mds *m, struct mwaiter *w)
{
	struct session *s;
	struct mwaiter **pp, *o;

	if (!w->ordered)
		return;
	w->ordered = false;
	rcu_read_lock();
	s = xa_load(&m->sessions, w->sid);
	rcu_read_unlock();
	if (!s)
		return;
	for (pp = &s->ordered; *pp && *pp != w; pp = &(*pp)->order_next)
		;
	if (*pp)
		*pp = w->order_next;
	w->order_next = NULL;
	for (o = s->ordered; o; o = o->order_next) {
		o->ready = true;
		atomic_store_explicit(&m->waiters_ready, true, memory_order_relaxed);
	}
	/* (one dropped with its connection is not over: it comes again) */
	if (w->msg.type == MDSP_MSG_REQUEST && (w->msg.request.flags & MDSP_REQ_REPLAY) && w->conn == s->conn &&
	    m->locker_ops && m->locker_ops->replay_left_locked)
		m->locker_ops->replay_left_locked(m, s);
}

void locker_order_session_gone(struct mds *m, struct session *s)
{
	struct mwaiter *w;

	while ((w = s->ordered)) {
		s->ordered = w->order_next;
		w->order_next = NULL;
		w->ordered = false;
		w->ready = true;
		atomic_store_explicit(&m->waiters_ready, true, memory_order_relaxed);
	}
}

/* Waiters gathering on @ino (0: all) may proceed. */
void locker_wake(struct mds *m, uint64_t ino)
{
	struct mwaiter *w;
	int i;

	for (w = m->waiters; w; w = w->next) {
		if (w->ready)
			continue;
		if (!ino || w->g.overflow) {
			w->ready = true;
			atomic_store_explicit(&m->waiters_ready, true, memory_order_relaxed);
			continue;
		}
		for (i = 0; i < w->g.n; i++)
			if (w->g.e[i].ino == ino) {
				w->ready = true;
				atomic_store_explicit(&m->waiters_ready, true, memory_order_relaxed);
				break;
			}
	}
}

void locker_wake_all(struct mds *m)
{
	locker_wake(m, 0);
}

void locker_waiter_free(struct mds *m, struct mwaiter *w)
{
	order_del(m, w);
	gather_refs(m, &w->g, -1);
	locker_gather_free(&w->g);
	mdsp_msg_free(&w->msg);
	conn_put(w->conn);
	free(w);
}

void locker_run_waiters(struct mds *m)
{
	struct mwaiter *ready, **rt, **pp, *w;
	int pass;

	/* a waiter that ran may make others ready (the rest of its session's
	 * ordered list): they run in the next pass, not at the next request
	 * or tick; bounded, should running waiters keep waking each other */
	for (pass = 0; pass < 4 && atomic_load_explicit(&m->waiters_ready, memory_order_relaxed); pass++) {
		ready = NULL;
		rt = &ready;
		pthread_mutex_lock(&m->lock);
		atomic_store_explicit(&m->waiters_ready, false, memory_order_relaxed);
		pp = &m->waiters;
		while ((w = *pp)) {
			if (!w->ready) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			w->queued = false;
			m->nwaiters--;
			w->next = NULL;
			*rt = w;
			rt = &w->next;
		}
		m->waiters_tail = pp;
		pthread_mutex_unlock(&m->lock);
		/* in arrival order; each takes the lock itself and may park again */
		while ((w = ready)) {
			ready = w->next;
			w->next = NULL;
			perf_inc(&locker_c_resumed, 1);
			if (w->msg.type == MDSP_MSG_CAPS)
				locker_caps_resume(m, w);
			else
				m->locker_ops->request_resume(m, w);
		}
	}
}

void locker_conn_closed(struct mds *m, struct conn *c)
{
	struct mwaiter **pp = &m->waiters, *w;

	while ((w = *pp)) {
		if (w->conn != c) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		m->nwaiters--;
		if (w->msg.type != MDSP_MSG_CAPS)
			dout(MDS, 5, "dropping parked %s tid %" PRIu64 " of closed connection %s",
			     mdsp_op_name(w->msg.request.op), w->msg.request.tid, c->peer);
		locker_waiter_free(m, w);
	}
	m->waiters_tail = pp;
}

void locker_free_locked(struct mds *m)
{
	struct mwaiter *w;

	while ((w = m->waiters)) {
		m->waiters = w->next;
		locker_waiter_free(m, w);
	}
	m->waiters_tail = &m->waiters;
	m->nwaiters = 0;
}
