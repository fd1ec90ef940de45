/*
 * request.c - the request pipeline: from a decoded REQUEST to its replies.
 *
 * request_handle() runs on the connection's reader thread.  A request is
 * checked against its session (open, not stale, not blocklisted), answered
 * from the completed table if its tid ran before (exactly-once, session.c),
 * held back during the reconnect phase after a restart, refused while the
 * journal is read-only or draining (journal_admit), throttled while the
 * journal's backlog is too long, and then run under mds->lock by
 * server_dispatch() (file-lock requests by flock_request()).  A request
 * that must wait for revokes is parked (locker_park) and run again by
 * request_resume() when they are acked, off the reader thread.  A read is
 * answered at once; a mutation is answered UNSAFE at once and SAFE when its
 * journal entry is durable (the journal sends the frame queued here, which
 * also goes into the session's completed table in the same entry).
 *
 * This is the top of the request path: it calls the sessions, the server,
 * caps, file locks and the journal, and nothing below calls it except
 * through ops tables (net_ops.request, locker_ops.request_resume).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

#include "common/config.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/flock.h"
#include "mds/journal.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/net.h"
#include "mds/prealloc.h"
#include "mds/request.h"
#include "mds/server.h"
#include "mds/session.h"

/* Encode @rep with @flags into @b (initialised by the caller). */
static int reply_encode(struct mdsp_buf *b, const struct mdsp_reply *rep, uint32_t flags)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REPLY;
	msg.reply = *rep;
	msg.reply.flags = flags;
	return mdsp_encode(b, &msg);
}

static int reply_frame(struct mdsp_buf *b, const struct mdsp_reply *rep, uint32_t flags)
{
	mdsp_buf_init(b);
	return reply_encode(b, rep, flags);
}

/*
 * A reply that is sent and forgotten (not journaled): a listing's is
 * encoded into one of the MDS's kept buffers, which reply_release() gives
 * back with the listing's entry block.
 */
static int reply_frame_kept(struct mds *m, struct mdsp_buf *b, const struct mdsp_reply *rep, uint32_t flags)
{
	mdsp_buf_init(b);
	if (rep->nentries)
		b->data = bufpool_get(&m->bigbufs, mdsp_reply_size_hint(rep), &b->cap);
	return reply_encode(b, rep, flags);
}

static void reply_release(struct mds *m, struct mdsp_buf *b, struct mdsp_msg *rmsg, size_t entries_cap)
{
	bufpool_put(&m->bigbufs, b->data, b->cap);
	mdsp_buf_init(b);
	if (entries_cap) {
		bufpool_put(&m->bigbufs, rmsg->reply.entries, entries_cap);
		rmsg->reply.entries = NULL;
	}
	mdsp_msg_free(rmsg);
}

static void send_error(struct conn *c, uint64_t tid, int err)
{
	struct mdsp_reply rep;
	struct mdsp_buf b;

	memset(&rep, 0, sizeof(rep));
	rep.tid = tid;
	rep.result = err;
	if (!reply_frame(&b, &rep, MDSP_REPLY_SAFE))
		conn_send_frame(c, &b);
	mdsp_buf_free(&b);
}

/* Answer a request whose tid is in the completed table. Caller holds mds->lock; drops it. */
static void answer_completed_unlock(struct mds *m, struct conn *c, struct session *s, struct completed *ce)
{
	struct mdsp_msg old;
	struct mdsp_buf b;
	const char *why;
	struct jitem *it;
	int r;

	perf_inc(&m->req_replayed, 1);
	r = mdsp_decode_frame(ce->frame, ce->len, &old, &why);
	if (r || old.type != MDSP_MSG_REPLY) {
		uint64_t tid = ce->tid;

		if (!r)
			mdsp_msg_free(&old);
		pthread_mutex_unlock(&m->lock);
		derr(MDS, "session %" PRIu64 ": stored reply of tid %" PRIu64 " is corrupt", s->id, tid);
		send_error(c, tid, -EIO);
		return;
	}
	old.reply.flags = MDSP_REPLY_SAFE | MDSP_REPLY_REPLAYED;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &old);
	mdsp_msg_free(&old);
	if (ce->jseq <= m->committed_jseq || r) {
		pthread_mutex_unlock(&m->lock);
		if (!r)
			conn_send_frame(c, &b);
		mdsp_buf_free(&b);
		return;
	}
	/* the original is not durable yet: answer when it is */
	it = session_item_new(c, s->id);
	if (!it) {
		pthread_mutex_unlock(&m->lock);
		mdsp_buf_free(&b);
		return;
	}
	it->frame = b;
	journal_submit_locked(m, NULL, it);
	pthread_mutex_unlock(&m->lock);
}

/*
 * Park @msg (the request numbered @seq of @s) as locker_park does; @ordered:
 * on the session's ordered list too, so that its later requests wait behind
 * it (a resend that waits, or one that waits behind such).  mds->lock held.
 */
static void park_ordered(struct mds *m, struct conn *c, struct mdsp_msg *msg, uint64_t t0, struct txn *t,
			 struct session *s, uint64_t seq, bool ordered)
{
	struct mwaiter *w = locker_park(m, c, msg, t0, t);

	if (!w)
		return;
	w->seq = seq;
	if (ordered) {
		locker_order_add(s, w);
		dout(MDS, 10, "session %" PRIu64 " tid %" PRIu64 " (%s, seq %" PRIu64 "): its later requests wait behind it",
		     s->id, w->msg.request.tid, mdsp_op_name(w->msg.request.op), seq);
	}
}

/*
 * Run a request (again, for a parked one: @w).  Returns true when it was
 * parked to wait for revokes (park.c): it runs again when they are acked,
 * and @msg no longer belongs to the caller.
 */
static bool request_run(struct mds *m, struct conn *c, struct mdsp_msg *msg, uint64_t t0, struct mwaiter *w)
{
	struct mdsp_request *req = &msg->request;
	struct mdsp_msg rmsg;
	struct mdsp_reply *rep = &rmsg.reply;
	struct session *s;
	struct completed *ce;
	struct txn t;
	struct mdsp_buf safe, unsafe, stored;
	struct jitem *it = NULL;
	uint64_t trim_to = 0, stored_before = 0;
	bool journaled = server_op_journaled(req);
	char oid[64], key[32];
	uint64_t seq;
	bool resent, gated, ordered;
	unsigned int n;
	int r;

	memset(&rmsg, 0, sizeof(rmsg));
	rmsg.type = MDSP_MSG_REPLY;
	if (!w) {
		perf_inc(&m->req_total, 1);
		DTRACE_PROBE3(loligo_mds, request_start, req->tid, req->op, req->flags);
		if (req->op == MDSP_OP_GETLK || req->op == MDSP_OP_SETLK) {
			/* answered now or when granted, never on this thread's time */
			flock_request(m, c, req);
			DTRACE_PROBE3(loligo_mds, request_done, req->tid, req->op, 0);
			return false;
		}
		if (req->op == MDSP_OP_RECLAIM_SESSION) {
			/* evicts (journaled, store fence) on its own: no lock held */
			session_reclaim_request(m, c, req, &r);
			send_error(c, req->tid, r);
			return false;
		}
		/* an event loop asked journal_over() before it ran this (and
		 * holds what must wait): it never waits here, at the cost of
		 * one request per loop past the bound */
		if (journaled && !c->loop)
			journal_throttle(m, c, req);
	}
	pthread_mutex_lock(&m->lock);
	s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
	if (w && (!s || s->id != w->sid)) {
		/* its session went or moved to another connection: the client
		 * sends the request again there */
		pthread_mutex_unlock(&m->lock);
		return false;
	}
	if (!s) {
		pthread_mutex_unlock(&m->lock);
		dout(MDS, 1, "%s: request tid %" PRIu64 " without a session", c->peer, req->tid);
		send_error(c, req->tid, -ENOTCONN);
		return false;
	}
	if (!w) {
		s->nreq++;
		seq = ++s->req_seq;
	} else {
		seq = w->seq;
	}
	resent = req->flags & (MDSP_REQ_REPLAY | MDSP_REQ_RETRY);
	gated = session_reconnect_gate_locked(m, s, req, journaled, !w);
	/* behind an earlier resend of its session that waits (park.c) */
	ordered = s->ordered && locker_order_blocked(s, seq);
	if (gated || ordered) {
		txn_init(&t);
		t.s = s;
		t.g.w = w;
		/* gated: run again at the phase's end (or any ack); held in
		 * order only: when what it waits behind leaves (park.c) */
		t.g.overflow = gated;
		park_ordered(m, c, msg, t0, &t, s, seq, ordered || resent);
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		return true;
	}
	/* shutting down: not run and not answered; the client resends it to
	 * the next MDS, as after a crash (what runs now could miss the drain) */
	if (atomic_load_explicit(&m->draining, memory_order_relaxed)) {
		pthread_mutex_unlock(&m->lock);
		dout(MDS, 5, "session %" PRIu64 " tid %" PRIu64 " (%s): not run, the MDS is shutting down", s->id,
		     req->tid, mdsp_op_name(req->op));
		return false;
	}
	if (req->oldest_tid > s->trimmed_below) {
		session_completed_trim_locked(s, req->oldest_tid);
		s->trimmed_below = req->oldest_tid;
		n = prealloc_trim_stale_locked(s, req->oldest_tid);
		if (n)
			perf_inc(&m->deleg_stale_freed, n);
	}
	if (journaled) {
		rcu_read_lock();
		ce = xa_load(&s->completed, req->tid);
		rcu_read_unlock();
		if (ce) {
			dout(MDS, 5, "session %" PRIu64 " tid %" PRIu64 " (%s, flags %#x attempt %u): answered from the completed table",
			     s->id, req->tid, mdsp_op_name(req->op), req->flags, req->attempt);
			answer_completed_unlock(m, c, s, ce);
			return false;
		}
	}
	/* a read-only MDS (journal writes fail) refuses a mutation before it
	 * changes anything; nothing is recorded, so a later retry of the same
	 * tid runs it then */
	if (journaled && (r = journal_admit(m, req))) {
		pthread_mutex_unlock(&m->lock);
		dout(MDS, 5, "session %" PRIu64 " tid %" PRIu64 " (%s): refused, the MDS is read-only (%s)", s->id,
		     req->tid, mdsp_op_name(req->op), strerror(-r));
		send_error(c, req->tid, r);
		return false;
	}
	/* the store's copy is trimmed with the next journaled request */
	if (journaled && s->trimmed_below > s->trimmed_stored) {
		stored_before = s->trimmed_stored;
		trim_to = s->trimmed_below;
		s->trimmed_stored = trim_to;
	}
	txn_init(&t);
	t.g.w = w;
	server_dispatch(m, s, req, rep, &t);
	if (rep->result == -ENOTCONN) {
		/*
		 * In a reply, ENOTCONN says "no session on this connection"
		 * (above): the client resumes its session and sends the request
		 * again.  An op that ran and failed with it (a store read that
		 * lost the cluster: RADOS's ENOTCONN) answers EIO, as other
		 * store errors do; else the client would send it again
		 * forever, a journaled op's answered again from the completed
		 * table each time.
		 */
		dout(MDS, 1, "session %" PRIu64 " tid %" PRIu64 " (%s): failed with ENOTCONN (the store): answered EIO",
		     s->id, req->tid, mdsp_op_name(req->op));
		rep->result = -EIO;
	}
	if (rep->result == LOCKER_WAIT) {
		/* revokes are in flight: it runs again once they are acked;
		 * @msg (and @w) belong to the waiter list from here on */
		if (trim_to)
			s->trimmed_stored = stored_before;   /* its txn is not journaled */
		park_ordered(m, c, msg, t0, &t, s, seq, resent);
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		mdsp_msg_free(&rmsg);
		return true;
	}
	if (!journaled) {
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		r = reply_frame_kept(m, &safe, rep, MDSP_REPLY_SAFE);
		if (!r)
			conn_send_frame(c, &safe);
		else
			send_error(c, req->tid, r);
		reply_release(m, &safe, &rmsg, t.entries_cap);
		if (req->op < MDSP_OP_MAX) {
			hist_add(&m->op_lat[req->op], now_mono_ns() - t0);
			perf_inc(&m->op_count[req->op], 1);
		}
		DTRACE_PROBE3(loligo_mds, request_done, req->tid, req->op, rep->result);
		return false;
	}
	txn_finish(m, &t);
	oid_completed(oid, sizeof(oid), s->id);
	/* the completed table keeps the reply without the directory trace
	 * (half the bytes of the journal entry otherwise): a resent request
	 * needs its result and target, and looks the directory up again */
	{
		struct mdsp_reply slim = *rep;

		slim.has_dir = false;
		slim.dname = NULL;
		/* nor the inos it delegated: whoever resends it has reconnected
		 * since and forgot them, and they are stale (prealloc.c); a
		 * client that took them as new would name them on fresh
		 * requests, which are refused */
		slim.deleg_start = slim.deleg_len = 0;
		r = reply_frame(&stored, &slim, MDSP_REPLY_SAFE);
	}
	if (!r)
		r = reply_frame(&safe, rep, MDSP_REPLY_SAFE);
	else
		mdsp_buf_init(&safe);
	if (!r)
		r = session_completed_add(s, req->tid, stored.data, stored.len, UINT64_MAX);
	it = r ? NULL : session_item_new(c, s->id);
	if (r || !it) {
		/* cannot record the result: the change is made, journal it anyway */
		derr(MDS, "session %" PRIu64 " tid %" PRIu64 ": cannot record the reply (%s)", s->id, req->tid,
		     strerror(r ? -r : ENOMEM));
		journal_submit_locked(m, &t, NULL);
		pthread_mutex_unlock(&m->lock);
		txn_free(&t);
		mdsp_buf_free(&safe);
		mdsp_buf_free(&stored);
		send_error(c, req->tid, -EIO);
		mdsp_msg_free(&rmsg);
		return false;
	}
	session_key_tid(key, sizeof(key), req->tid);
	txn_edit(&t, EDIT_SET, oid, key, stored.data, stored.len, NULL);
	mdsp_buf_free(&stored);
	/* after the SET, which creates the object for a session's first
	 * mutation: a range removal from an object that does not exist fails
	 * (ENOENT, as in RADOS) and takes the compound op applying the
	 * segment's edits to it down with it, so the results of the session's
	 * first requests were lost at expiry; [.., trim_to) never holds tid */
	if (trim_to) {
		session_key_tid(key, sizeof(key), trim_to);
		txn_edit(&t, EDIT_RMRANGE, oid, "", NULL, 0, key);
	}
	if (s->ncompleted > cfg_uint(CFG_mds_max_completed_requests) && !s->warned_completed) {
		s->warned_completed = true;
		dinfo(MDS, "session %" PRIu64 " (%s) has %" PRIu64 " completed requests: the client does not advance its oldest tid",
		      s->id, s->client_name, s->ncompleted);
	}
	it->frame = safe;
	it->op = req->op;
	it->tid = req->tid;
	it->start_ns = t0;
	/* hold the send lock across the submit so that our UNSAFE reply goes
	 * out before the writer can send the SAFE one */
	pthread_mutex_lock(&c->send_lock);
	ce = xa_load(&s->completed, req->tid);
	/* a failed op's only reply is the SAFE one, which its client waits
	 * for; a replay's client waits for it to end its reconnect */
	if (rep->result || (req->flags & MDSP_REQ_REPLAY))
		ce->jseq = journal_submit_locked(m, &t, it);
	else
		ce->jseq = journal_submit_lazy_locked(m, &t, it);
	pthread_mutex_unlock(&m->lock);
	txn_free(&t);
	/* a failed op changed nothing: it gets only the SAFE reply (its
	 * result is journaled for exactly-once, like any other) */
	mdsp_buf_init(&unsafe);
	if (!rep->result && !reply_frame(&unsafe, rep, MDSP_REPLY_UNSAFE))
		conn_send_frame_locked(c, &unsafe);
	pthread_mutex_unlock(&c->send_lock);
	mdsp_buf_free(&unsafe);
	mdsp_msg_free(&rmsg);
	if (req->op < MDSP_OP_MAX) {
		hist_add(&m->op_lat[req->op], now_mono_ns() - t0);
		perf_inc(&m->op_count[req->op], 1);
	}
	DTRACE_PROBE3(loligo_mds, request_unsafe, req->tid, req->op, t0);
	return false;
}

bool request_must_wait(struct mds *m, const struct mdsp_msg *msg)
{
	return server_op_journaled(&msg->request) && journal_over(m);
}

struct jwaiter *request_hold(struct mds *m, struct conn *c, const struct mdsp_msg *msg)
{
	return journal_hold(m, c, &msg->request);
}

void request_unhold(struct mds *m, struct jwaiter *w)
{
	journal_unhold(m, w);
}

void request_handle(struct mds *m, struct conn *c, struct mdsp_msg *msg)
{
	request_run(m, c, msg, now_mono_ns(), NULL);
	/* it may have ended the reconnect phase, which parked requests wait
	 * for, and the lock requests it held back */
	flock_flush(m);
	if (atomic_load_explicit(&m->waiters_ready, memory_order_relaxed))
		locker_run_waiters(m);
}

void request_resume(struct mds *m, struct mwaiter *w)
{
	if (request_run(m, w->conn, &w->msg, w->t0, w))
		return;
	pthread_mutex_lock(&m->lock);
	locker_waiter_free(m, w);
	pthread_mutex_unlock(&m->lock);
}
