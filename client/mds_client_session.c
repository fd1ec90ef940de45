/*
 * mds_client_session.c - the client's session with the MDS: a reader
 * thread per connection, renewals, dead-MDS detection, reconnect with
 * backoff and the replay that follows; the connections themselves are in
 * mds_client_conn.c and the handshake in mds_client_auth.c.
 *
 * One session thread owns the session's life.  It connects (bounded by
 * client_connect_timeout), runs the AUTH exchange (HELLO/CHALLENGE, and
 * with a key PROOF/OK, after which every frame both ways carries a MAC; see
 * mds_proto/auth.c), sends SESSION REQUEST_OPEN -- or, when a session
 * existed, SESSION RECONNECT with the old session id and the proof that we
 * hold its secret -- and reads the answers itself before any reader thread
 * exists, so nothing else can consume the handshake.  An MDS that refuses
 * the key (none for our name, a wrong one, none offered where one is
 * required) is a final answer: mdsc_open_session fails with the reason,
 * which the log line spells out with what to do.  Then it starts the
 * connection's reader thread and replays:
 *
 *   1. requests that got only an UNSAFE reply are resent in tid order with
 *      MDSP_REQ_REPLAY: the MDS applied them in memory but may have lost
 *      them in a crash; it answers the ones it journaled from its
 *      completed-request table and re-executes the rest;
 *   2. requests that were sent but never answered are re-driven in tid
 *      order with MDSP_REQ_RETRY; a tid the MDS already executed is again
 *      answered from the completed table, so nothing runs twice;
 *   3. the session becomes OPEN and the wait list (requests submitted while
 *      there was no session) is kicked; until that is done, requests
 *      submitted meanwhile wait for it, and caps messages (those parked
 *      during the setup too) are parked (wait_kicking), so that none
 *      overtakes one that waited (a chmod, or a size flush, of a file
 *      whose create waited).
 *
 * The client mutex is held for the setup (publish the connection, bump the
 * generation; the session is not OPEN yet, so new requests park on the
 * wait list) and the teardown (mark it OPEN), never while replaying.
 * A request bound to an older connection generation is exactly the set
 * step 2 re-drives; its original sender's write fails on the dead socket.
 *
 * If the MDS refuses to resume the session (it was evicted or forgotten),
 * a new session is opened.  Nothing sent on the lost session can be
 * replayed into one that never saw it without risking a second execution
 * (the new session's completed table is empty), so requests that had only
 * an UNSAFE reply fail (mdsc_wait_safe/mdsc_sync return -EIO, as the Linux
 * client does), and so do unanswered requests that were sent and change
 * something (every mdsp_op_is_write op, OPEN with O_CREAT/O_TRUNC/O_EXCL):
 * mdsc_do_request returns -EIO.  Only unanswered reads (and requests never
 * sent) are re-driven.  All of it is logged.
 *
 * Sending: submitters encode outside any lock and hand the frame to the
 * connection's out queue (mdsc_conn_send: the sequence number, crcs and MAC
 * are set there, in send order).  A submitter that finds the socket idle
 * (nothing queued, no send in progress) sends its frame itself with
 * MSG_DONTWAIT -- one system call, no thread hand-off -- and leaves to the
 * writer thread whatever the socket does not take at once; otherwise the
 * frame is queued and the writer takes everything queued into one writev
 * (up to 64 frames), so a burst of requests from many threads costs a few
 * system calls, and a slow socket holds up only the writer.  The queue is bounded
 * (client_mds_send_queue): past it submitters wait for room, which is the
 * backpressure; caps messages and renewals never wait (they may pass the
 * bound: mdsc_send_caps is documented never to block), and the session
 * thread waits only up to the stall bound on replay and the wait-list kick.
 *
 * The connection is declared dead on EOF/reset from the reader, on a write
 * error, or when nothing arrived for client_session_timeout while a renew
 * is outstanding (an MDS that hangs without closing the socket).  A peer
 * that stops reading cannot hang anything: the socket has SO_SNDTIMEO and
 * TCP_USER_TIMEOUT of client_session_timeout, so the writer's stuck write
 * fails and marks the connection dead (its shutdown and the queue's wake-up
 * free every waiting submitter); the session thread's watchdog also kills
 * a connection whose queue has not moved for that long (30 s when the
 * timeout is 0), and a renew that could not go out still counts as
 * outstanding, so the silence is judged as before.
 *
 * Several MDS daemons (issue 19): client_mds_addr may list every MDS of the
 * filesystem, the active one and the standbys.  A standby does not listen
 * until it takes the rank, and the new active loads the session table and
 * the journal as a restarted MDS does, so following it is a reconnect like
 * any other, only to another address.  Each attempt goes to m->addr; a
 * failed one (refused, timed out, handshake lost) moves to the next address
 * at once, and client_reconnect_backoff_* applies only after a whole round
 * of them failed.  The address that worked stays current, so the next round
 * starts there.  m->addr is an atomic pointer into m->addrs (alive as long
 * as the client) that only this thread stores: any log line may read it.
 *
 * A deposed MDS may not close anything: SIGSTOPped past its grace, its
 * sockets stay open and the kernel takes our bytes, so only the 30 s of
 * client_session_timeout would end the connection.  With two addresses or
 * more, a connection silent for client_mds_probe_after (2 s) while we wait
 * for the MDS (a renew unanswered, or a request in the map, which waits for
 * a reply or its SAFE: xa_count under the client mutex, once per tick)
 * makes the session thread probe the other addresses, with no lock held,
 * at most once per interval: a connect and an AUTH HELLO each, answered
 * within 500 ms.  One that answers has the rank (standbys do not listen; a
 * deposed MDS still stopped accepts connects into its listen backlog but
 * says nothing, so it is not taken for one): the silent connection is
 * declared dead and the session resumed there, with the replay above.  An
 * MDS that spoke during the probe is kept.  With one address nothing is
 * probed.
 */
#include "client/mds_client_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/lockdep.h"
#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"

#define CLOSE_WAIT_MS 2000

/* A connection is published (s->conn) but its replays have not all gone. */
static bool setting_up(const struct mds_session *s)
{
	return s->state == SESS_OPENING || s->state == SESS_RECONNECTING;
}

/* Bound on the cap messages parked during one setup: a client holds at most
 * this many caps' worth of acks in flight anyway; past it, ENOTCONN (as
 * before parking existed: the flush is retried, the MDS re-sends revokes at
 * the next reconnect). */
#define PARKED_MAX 65536u

/* The connection they were for is gone: as if sent on it before it died. */
static void drop_parked_locked(struct mds_session *s)
{
	struct out_frame *f, *next;

	for (f = s->parked; f; f = next) {
		next = f->next;
		mdsp_buf_free(&f->b);
		free(f);
	}
	s->parked = NULL;
	s->parked_tail = &s->parked;
	s->nparked = 0;
}

/* Takes @b's bytes on success.  Caller holds the client mutex. */
static int park_frame_locked(struct mds_session *s, struct mdsp_buf *b)
{
	struct out_frame *f;

	if (s->parked_gen != s->gen)
		drop_parked_locked(s);
	if (s->nparked >= PARKED_MAX || !(f = malloc(sizeof(*f))))
		return -ENOTCONN;
	f->b = *b;
	f->next = NULL;
	mdsp_buf_init(b);
	if (!s->parked)
		s->parked_tail = &s->parked;
	*s->parked_tail = f;
	s->parked_tail = &f->next;
	s->nparked++;
	s->parked_gen = s->gen;
	return 0;
}

/* The gate opens on @c: what waited goes first, in order.  The sends queue
 * (never block; out_lock is a leaf), so under the client mutex no later
 * mdsc_send_caps can overtake them. */
static void send_parked_locked(struct mds_session *s, struct mds_conn *c)
{
	struct out_frame *f, *next;

	if (s->parked_gen != c->gen) {
		drop_parked_locked(s);
		return;
	}
	for (f = s->parked; f; f = next) {
		next = f->next;
		mdsc_conn_send_wait(c, &f->b, SEND_NOWAIT);
		mdsp_buf_free(&f->b);
		free(f);
	}
	s->parked = NULL;
	s->parked_tail = &s->parked;
	s->nparked = 0;
}

static const char *state_name(enum sess_state st)
{
	switch (st) {
	case SESS_NEW: return "new";
	case SESS_OPENING: return "opening";
	case SESS_RECONNECTING: return "reconnecting";
	case SESS_EVICTED: return "evicted";
	case SESS_OPEN: return "open";
	case SESS_CLOSING: return "closing";
	case SESS_CLOSED: return "closed";
	}
	return "?";
}

void mdsc_kick_locked(struct mds_client *m)
{
	m->kick = true;
	pthread_cond_signal(&m->tick_cond);
}

void mdsc_kick(struct mds_client *m)
{
	uint64_t t0 = mdsc_lock(m);

	mdsc_kick_locked(m);
	mdsc_unlock(m, SEC_SESSION, t0);
}

/* ---- eviction ------------------------------------------------------------------ */

/*
 * m->mutex (mdsc->mutex) held; evicted_report() after the unlock.
 * The MDS ended our session (evicted us, or refused to resume it: it is
 * gone).  Unless client_reconnect_stale, that is final: no new session is
 * opened (the MDS keeps an evicted client blocklisted anyway) and every
 * request fails with EIO from now on; with it, the session thread keeps
 * trying to open a new session and requests fail until one opens.
 */
static void evicted_locked(struct mds_client *m)
{
	struct mds_session *s = &m->session;

	lockdep_assert_held(&m->mutex);
	atomic_store_explicit(&m->evicted, true, memory_order_release);
	if (!m->reconnect_stale) {
		s->state = SESS_EVICTED;
		m->want_session = false;
		s->next_attempt_ns = UINT64_MAX;
	} else {
		/* a blocklisted client is refused for a while: try every so often */
		s->next_attempt_ns = now_mono_ns() + mdsc_secs_to_ns(CFG_client_reconnect_backoff_max);
	}
	pthread_cond_broadcast(&m->session_cond);
}

/* Fail every request in flight with EIO.  No lock held. */
static unsigned int abort_inflight(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		n += mdsc_abort_request(m, r, -EIO, false);
		mdsc_req_put(r);
	}
	mdsc_kick_wait_list(m);         /* requests parked for a session: they fail now */
	return n;
}

/*
 * After evicted_locked: say so, and without client_reconnect_stale fail
 * everything in flight.  With it, what was sent is handled by the next
 * open as after any lost session (reads sent again, changes failed), unless
 * that open is refused as blocklisted (then it fails at once: the entry may
 * last an hour).  No lock held.
 */
static void evicted_report(struct mds_client *m, uint64_t sid)
{
	char why[sizeof(m->session.evict_reason)];
	unsigned int n = 0;
	uint64_t t0;

	t0 = mdsc_lock(m);
	snprintf(why, sizeof(why), "%s", m->session.evict_reason);
	mdsc_unlock(m, SEC_SESSION, t0);
	if (!m->reconnect_stale)
		n = abort_inflight(m);
	else
		mdsc_kick_wait_list(m);
	if (m->reconnect_stale)
		derr(CLIENT, "mds %s evicted this client (session %llu: %s): client_reconnect_stale is set: "
		     "opening a new session once the mds lets us in (file locks and unsafe changes are lost); "
		     "until then operations fail with EIO", m->addr, (unsigned long long)sid, why);
	else
		derr(CLIENT, "mds %s evicted this client (session %llu: %s): every operation fails with EIO from "
		     "now on (%u request(s) failed); remount to come back as a new client (or set "
		     "client_reconnect_stale = true)", m->addr, (unsigned long long)sid, why, n);
}

/* ---- messages from the MDS --------------------------------------------------- */

static void handle_session(struct mds_client *m, struct mds_conn *c, const struct mdsp_session *ss)
{
	struct mds_session *s = &m->session;
	uint32_t event = 0;
	bool config = false, no_session = false;
	uint64_t t0, id;

	t0 = mdsc_lock(m);
	if (s->conn != c) {
		mdsc_unlock(m, SEC_SESSION, t0);
		return;
	}
	id = s->id;
	switch (ss->op) {
	case MDSP_SESSION_RENEW:
		s->last_renew_ack_ns = now_mono_ns();
		if (ss->lease_ms)
			s->lease_ms = ss->lease_ms;
		break;
	case MDSP_SESSION_CONFIG:
		/* `fs set max_file_size`: writes past it fail with EFBIG from now on */
		if (ss->max_file_size && ss->max_file_size != atomic_load(&m->max_file_size)) {
			atomic_store(&m->max_file_size, ss->max_file_size);
			config = true;
		}
		break;
	case MDSP_SESSION_STALE:
		s->stale_count++;
		s->last_renew_sent_ns = 0;      /* renew right away */
		mdsc_kick_locked(m);
		event = ss->op;
		break;
	case MDSP_SESSION_CLOSE:
		if (s->state == SESS_CLOSING) {
			s->state = SESS_CLOSED;
			pthread_cond_broadcast(&m->session_cond);
			break;
		}
		/* an unsolicited close is an eviction */
		__attribute__((fallthrough));
	case MDSP_SESSION_REJECT:
		if (ss->result == -ENOTCONN && (s->state == SESS_CLOSING || s->state == SESS_CLOSED || m->stopping))
			break;          /* closing ourselves: a late caps message; nothing to resume */
		if (ss->result == -ENOTCONN) {
			/*
			 * "No session on this connection" (to a RENEW, a caps
			 * message): not an eviction, the MDS does not know us
			 * here.  As after a lost connection: drop it and resume
			 * the session; the MDS says then whether it still has it
			 * (resumed: requests and flushes are sent again) or not
			 * (refused: that is the eviction).
			 */
			no_session = true;
			mdsc_conn_mark_dead(c, false, 0, NULL);
			mdsc_kick_locked(m);
			break;
		}
		__attribute__((fallthrough));
	case MDSP_SESSION_EVICTED:
		s->id = 0;
		s->lost = true;
		event = MDSP_SESSION_EVICTED;
		snprintf(s->evict_reason, sizeof(s->evict_reason), "%s",
			 ss->reason ? ss->reason : ss->op == MDSP_SESSION_CLOSE ? "closed by the mds" : "no reason given");
		evicted_locked(m);
		mdsc_conn_mark_dead(c, false, 0, NULL);
		mdsc_kick_locked(m);
		break;
	default:
		break;
	}
	mdsc_unlock(m, SEC_SESSION, t0);
	if (no_session) {
		perf_inc(&m->c_no_session, 1);
		derr(CLIENT, "mds %s: session %llu: the mds has no session on this connection (%s): reconnecting",
		     m->addr, (unsigned long long)id, ss->reason ? ss->reason : "no reason given");
	}
	if (event == MDSP_SESSION_EVICTED)
		evicted_report(m, id);
	/* log after the unlock: no I/O under the client mutex */
	if (event == MDSP_SESSION_STALE)
		derr(CLIENT, "mds %s: session %llu went stale (%s): renewing", m->addr, (unsigned long long)id,
		     ss->reason ? ss->reason : "lease ran out");
	else if (config)
		dinfo(CLIENT, "mds %s: the filesystem's max_file_size is now %llu bytes", m->addr,
		      (unsigned long long)ss->max_file_size);
	else if (!event && ss->op != MDSP_SESSION_RENEW && ss->op != MDSP_SESSION_CLOSE &&
		 ss->op != MDSP_SESSION_CONFIG)
		dout(CLIENT, 1, "mds %s: unexpected session message %s ignored", m->addr,
		     mdsp_session_op_name(ss->op));
	if (event && m->ops.session_event)
		m->ops.session_event(m->ops_arg, event);
}

/* Takes ownership of @msg. */
static void dispatch(struct mds_client *m, struct mds_conn *c, struct mdsp_msg *msg)
{
	switch (msg->type) {
	case MDSP_MSG_REPLY:
		if (msg->reply.result == -ESHUTDOWN || msg->reply.result == -ENOTCONN) {
			/*
			 * Not an answer to give the application.  ESHUTDOWN: an
			 * MDS that the store fenced (a standby took rank 0 and
			 * deposed it) or that is going away.  ENOTCONN: the MDS
			 * has no session on this connection (it went, or moved
			 * to another connection), whatever the request was (a
			 * file lock's too).  Either way: drop the connection, as
			 * if it had broken; the session resumes (at the MDS that
			 * serves) and the request is sent again there; a session
			 * the MDS no longer has is refused then: the eviction.
			 */
			if (msg->reply.result == -ENOTCONN) {
				perf_inc(&m->c_no_session, 1);
				derr(CLIENT, "mds %s answered tid %llu with ENOTCONN (no session on this connection): "
				     "reconnecting", m->addr, (unsigned long long)msg->reply.tid);
			} else {
				derr(CLIENT, "mds %s answered tid %llu with ESHUTDOWN (it no longer serves): reconnecting",
				     m->addr, (unsigned long long)msg->reply.tid);
			}
			mdsc_conn_mark_dead(c, false, 0, NULL);
			mdsp_msg_free(msg);
			free(msg);
			return;
		}
		mdsc_handle_reply(m, msg);
		return;
	case MDSP_MSG_SESSION:
		handle_session(m, c, &msg->session);
		break;
	case MDSP_MSG_CAPS:
		if (m->ops.handle_caps)
			m->ops.handle_caps(m->ops_arg, &msg->caps);
		break;
	default:
		dout(CLIENT, 1, "mds %s: %s message ignored", m->addr, mdsp_msg_type_name(msg->type));
		break;
	}
	mdsp_msg_free(msg);
	free(msg);
}

static void *reader_main(void *arg)
{
	struct mds_conn *c = arg;
	struct mds_client *m = c->mdsc;
	const char *why = NULL;
	struct mdsp_msg *msg;
	int r;

	pthread_setname_np(pthread_self(), "mdsc-reader");
	for (;;) {
		msg = malloc(sizeof(*msg));
		if (!msg) {
			r = -ENOMEM;
			why = "out of memory";
			break;
		}
		r = mdsc_conn_recv(c, msg, -1, &why);
		if (r == -EOPNOTSUPP) {
			dout(CLIENT, 1, "mds %s: message of unknown type skipped", m->addr);
			free(msg);
			continue;
		}
		if (r) {
			free(msg);
			break;
		}
		atomic_store_explicit(&c->last_rx_ns, now_mono_ns(), memory_order_relaxed);
		dispatch(m, c, msg);
	}
	/* a connection we shut down ourselves ends quietly */
	mdsc_conn_mark_dead(c, true, atomic_load(&c->dead) ? 0 : r, why);
	return NULL;
}

/* Stop and release a connection the session no longer uses.  No lock held. */
void mdsc_conn_reap(struct mds_conn *c)
{
	mdsc_conn_mark_dead(c, false, 0, NULL);
	if (c->has_reader)
		pthread_join(c->reader, NULL);
	c->has_reader = false;
	pthread_join(c->writer, NULL);
	mdsc_conn_put(c);
}

/* ---- replay ---------------------------------------------------------------------- */

/* Requests that got only an UNSAFE reply, when the MDS lost the session. */
static unsigned int fail_unsafe(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if ((atomic_load(&r->state) & (RS_GOT_UNSAFE | RS_GOT_SAFE)) == RS_GOT_UNSAFE &&
		    mdsc_abort_request(m, r, -EIO, false)) {
			derr(CLIENT, "mds request tid %llu (%s) had only an UNSAFE reply and the mds lost the "
			     "session: it may not be durable (EIO to fsync)",
			     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op));
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(&m->c_unsafe_lost, n);
	return n;
}

/*
 * May @a run again in a session that never saw it?  Reads may; so may an
 * OPEN without O_CREAT/O_TRUNC and a file lock (setting a lock state twice
 * is setting it once, and the lost session's locks are gone anyway).  Every
 * namespace or attribute change may not: the new session's completed table
 * is empty, so a second execution is not recognised.
 */
static bool retry_safe_in_new_session(const struct mdsp_request *a)
{
	if (mdsp_op_is_write(a->op))
		return false;
	if (a->op == MDSP_OP_OPEN || a->op == MDSP_OP_CREATE)
		return !(a->oflags & (O_CREAT | O_TRUNC | O_EXCL));
	return true;
}

/*
 * A new session replaced a lost one: requests sent on the old session and
 * never answered may have been executed there; those that change something
 * fail with EIO instead of being re-driven (never executed twice).
 */
static unsigned int fail_sent_writes(struct mds_client *m)
{
	struct mdsc_req *r;
	uint64_t idx = 0;
	unsigned int n = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if (!(atomic_load(&r->state) & (RS_GOT_REPLY | RS_ABORTED | RS_WAITING)) &&
		    atomic_load(&r->sent_gen) && !retry_safe_in_new_session(&r->pub.args) &&
		    mdsc_abort_request(m, r, -EIO, true)) {
			derr(CLIENT, "mds request tid %llu (%s) was sent on a session the mds lost and never "
			     "answered: it may have been executed, so it is not sent again (EIO)",
			     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op));
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(&m->c_sent_lost, n);
	return n;
}

/*
 * Resend in tid order on @c: @replay_pass: requests with only an UNSAFE
 * reply (MDSP_REQ_REPLAY); otherwise requests sent on an older connection
 * and never answered (MDSP_REQ_RETRY).  No lock held.
 */
static unsigned int resend(struct mds_client *m, struct mds_conn *c, bool replay_pass)
{
	struct mdsc_req *r;
	uint64_t idx = 0, g;
	unsigned int n = 0;
	uint32_t st;
	bool want;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		st = atomic_load(&r->state);
		g = atomic_load(&r->sent_gen);
		if (replay_pass)
			want = (st & (RS_GOT_UNSAFE | RS_GOT_SAFE | RS_ABORTED)) == RS_GOT_UNSAFE;
		else
			want = !(st & (RS_GOT_REPLY | RS_ABORTED | RS_WAITING)) && g && g < c->gen;
		if (want) {
			atomic_store(&r->sent_gen, c->gen);
			if (mdsc_send_request(m, c, r, replay_pass ? MDSP_REQ_REPLAY : MDSP_REQ_RETRY)) {
				mdsc_req_put(r);
				break;          /* connection gone again: the next reconnect redoes it */
			}
			n++;
		}
		mdsc_req_put(r);
	}
	perf_inc(replay_pass ? &m->c_replays : &m->c_retries, n);
	return n;
}

/* m->mutex held: a session attempt failed with @err: when the next may start */
static void backoff_locked(struct mds_client *m, int err)
{
	struct mds_session *s = &m->session;
	uint64_t lo = mdsc_secs_to_ns(CFG_client_reconnect_backoff_min);
	uint64_t hi = mdsc_secs_to_ns(CFG_client_reconnect_backoff_max);

	lockdep_assert_held(&m->mutex);
	if (hi < lo)
		hi = lo;
	s->backoff_ns = s->backoff_ns ? s->backoff_ns * 2 : lo;
	if (s->backoff_ns > hi)
		s->backoff_ns = hi;
	s->next_attempt_ns = now_mono_ns() + s->backoff_ns;
	s->last_error = err;
}

/* m->mutex held, on the session thread: the next attempt (and every log
 * line from now on) goes to m->addrs[@i] */
static void set_addr_locked(struct mds_client *m, uint32_t i)
{
	lockdep_assert_held(&m->mutex);
	m->session.addr_idx = i;
	atomic_store_explicit(&m->addr, m->addrs[i], memory_order_release);
}

/*
 * m->mutex held: the attempt at m->addr failed with @err.  With several MDS
 * addresses the next one is tried at once; the backoff applies only once a
 * whole round (one attempt at each) failed, and the next round starts where
 * this one did: at the address that worked last.
 */
static void attempt_failed_locked(struct mds_client *m, int err)
{
	struct mds_session *s = &m->session;

	lockdep_assert_held(&m->mutex);
	if (m->naddrs > 1)
		set_addr_locked(m, (s->addr_idx + 1) % m->naddrs);
	if (++s->round_failed < m->naddrs) {
		s->next_attempt_ns = now_mono_ns();
		s->last_error = err;
		return;
	}
	s->round_failed = 0;
	backoff_locked(m, err);
}

/*
 * One attempt to bring the session up at m->addr: connect, open or resume,
 * replay, open the gate.  Runs on the session thread with no lock held.
 */
static void connect_session(struct mds_client *m)
{
	struct mds_session *s = &m->session;
	int tmo = (int)(mdsc_secs_to_ns(CFG_client_connect_timeout) / 1000000ull);
	uint64_t t0, resume_id, old_epoch, backoff, tmo_ns, deleg_tid = 0;
	uint8_t secret[MDSP_KEY_LEN];
	struct mdsc_granted g = { 0 };
	const char *addr = atomic_load(&m->addr), *next_addr;   /* only this thread changes it */
	const char *why = NULL;
	struct mds_conn *c = NULL;
	unsigned int nreplay = 0, nretry = 0, nlost = 0;
	bool resumed, was_open_before, lost;
	int r, fd = -1, refused = 0;

	if (tmo <= 0)
		tmo = 5000;
	t0 = mdsc_lock(m);
	lost = s->lost;
	s->lost = false;
	resume_id = s->id;
	memcpy(secret, s->secret, MDSP_KEY_LEN);
	old_epoch = s->mds_epoch;
	was_open_before = s->opened_ns != 0;
	s->state = resume_id ? SESS_RECONNECTING : SESS_OPENING;
	mdsc_unlock(m, SEC_SESSION, t0);

	if (lost) {
		nlost = fail_unsafe(m);
		if (nlost)
			derr(CLIENT, "mds %s: session was evicted: %u request(s) with only an UNSAFE reply "
			     "failed", m->addr, nlost);
	}
	/* before the MDS makes our delegations stale: no request above this
	 * tid names one of their inos (0: not known, it keeps them) */
	if (resume_id && m->ops.deleg_quiesce && m->ops.deleg_quiesce(m->ops_arg, (uint64_t)tmo * 500000ull))
		deleg_tid = mdsc_last_tid(m);
	tmo_ns = mdsc_secs_to_ns(CFG_client_session_timeout);
	r = mdsc_tcp_connect(addr, tmo, (unsigned int)(tmo_ns / 1000000ull), &fd, &why);
	if (r)
		goto fail;
	c = mdsc_conn_new(m, fd);
	if (!c) {
		close(fd);
		r = -ENOMEM;
		why = "out of memory";
		goto fail;
	}
	t0 = mdsc_lock(m);
	if (m->stopping)
		mdsc_conn_mark_dead(c, false, 0, NULL);
	s->handshaking = c;
	mdsc_unlock(m, SEC_SESSION, t0);
	r = mdsc_handshake(m, c, resume_id, secret, deleg_tid, tmo, &g, &refused);
	memset(secret, 0, sizeof(secret));
	t0 = mdsc_lock(m);
	s->handshaking = NULL;
	mdsc_unlock(m, SEC_SESSION, t0);
	if (r == -EACCES) {
		/* the MDS refused our key (or we refused it): final, like a
		 * refused open; the reason and what to do are logged */
		perf_inc(&m->c_rejects, 1);
		r = refused ? refused : -EACCES;
		why = "authentication refused (see above; a mount waiting for it gives up)";
		t0 = mdsc_lock(m);
		s->rejected = true;
		mdsc_unlock(m, SEC_SESSION, t0);
		goto fail_conn;
	}
	if (r == -ESTALE && resume_id) {
		/* the session is gone (evicted, closed, forgotten): an eviction */
		perf_inc(&m->c_rejects, 1);
		nlost = fail_unsafe(m);
		mdsc_conn_reap(c);
		t0 = mdsc_lock(m);
		s->id = 0;
		s->lost = false;                /* fail_unsafe just ran */
		snprintf(s->evict_reason, sizeof(s->evict_reason), "%s", g.reason);
		if (m->reconnect_stale) {
			s->next_attempt_ns = 0;         /* open the new session right away */
			m->want_session = true;
		}
		evicted_locked(m);
		mdsc_unlock(m, SEC_SESSION, t0);
		derr(CLIENT, "mds %s: session %llu is gone; %u request(s) with only an UNSAFE reply failed",
		     m->addr, (unsigned long long)resume_id, nlost);
		evicted_report(m, resume_id);
		if (m->ops.session_event)
			m->ops.session_event(m->ops_arg, MDSP_SESSION_EVICTED);
		return;
	}
	if (r == -ESTALE && refused == -ESHUTDOWN && m->reconnect_stale && atomic_load(&m->evicted)) {
		/* still blocklisted: try again later; what was in flight fails now */
		unsigned int n = abort_inflight(m);

		if (n)
			derr(CLIENT, "mds %s keeps this client blocklisted: %u request(s) in flight failed with "
			     "EIO", m->addr, n);
		r = refused;
		why = "still blocklisted by the mds";
		goto fail_conn;
	}
	if (r == -ESTALE) {
		/* a fresh open refused: transient while the MDS starts (EAGAIN, EBUSY) */
		r = refused;
		why = "refused by the mds";
		if (refused != -EAGAIN && refused != -EBUSY) {
			t0 = mdsc_lock(m);
			s->rejected = true;
			mdsc_unlock(m, SEC_SESSION, t0);
		}
		goto fail_conn;
	}
	if (r) {
		why = why ? why : strerror(-r);
		goto fail_conn;
	}

	/* replay, setup: publish the connection, not yet OPEN (new requests park) */
	t0 = mdsc_lock(m);
	s->gen++;
	c->gen = s->gen;
	mdsc_conn_get(c);
	s->conn = c;
	s->id = g.id;
	memcpy(s->secret, g.secret, MDSP_KEY_LEN);
	memset(g.secret, 0, sizeof(g.secret));
	s->lease_ms = g.lease_ms;
	s->mds_epoch = g.epoch;
	atomic_store(&m->max_file_size, g.max_file_size);
	s->renew_seq = g.seq;
	s->last_renew_sent_ns = s->last_renew_ack_ns = now_mono_ns();
	s->rejected = false;
	resumed = resume_id && g.id == resume_id;
	if (atomic_load(&m->evicted)) {
		/* client_reconnect_stale: back, as a new client */
		atomic_store_explicit(&m->evicted, false, memory_order_release);
		dinfo(CLIENT, "mds %s: a new session %llu after the eviction: operations work again "
		      "(locks and unsafe changes of before are lost)", m->addr, (unsigned long long)g.id);
	}
	mdsc_unlock(m, SEC_REPLAY, t0);
	if (g.nrefused && m->ops.locks_refused)
		m->ops.locks_refused(m->ops_arg, g.refused, g.nrefused);
	free(g.refused);
	g.refused = NULL;

	if (pthread_create(&c->reader, NULL, reader_main, c) == 0) {
		c->has_reader = true;
	} else {
		derr(CLIENT, "mds %s: cannot start the reader thread", m->addr);
		mdsc_conn_mark_dead(c, false, 0, NULL);
	}
	if (resume_id && !resumed) {
		nlost = fail_unsafe(m);
		derr(CLIENT, "mds %s: asked to resume session %llu, got a new session %llu: %u request(s) with "
		     "only an UNSAFE reply failed", m->addr, (unsigned long long)resume_id,
		     (unsigned long long)g.id, nlost);
	}
	if (!resumed) {
		/* a new session: nothing sent before may run again unless it is harmless */
		nlost = fail_sent_writes(m);
		if (nlost)
			derr(CLIENT, "mds %s: new session %llu: %u unanswered request(s) sent on the lost session "
			     "failed with EIO; unanswered reads are sent again", m->addr,
			     (unsigned long long)g.id, nlost);
	}
	if (resumed)
		nreplay = resend(m, c, true);
	nretry = resend(m, c, false);

	{
		/* test hook: hold the window in which acks are parked open */
		uint64_t d = mdsc_secs_to_ns(CFG_client_debug_reconnect_gate_delay);

		if (d && resume_id) {
			struct timespec ts = { .tv_sec = (time_t)(d / 1000000000ull),
					       .tv_nsec = (long)(d % 1000000000ull) };

			nanosleep(&ts, NULL);
		}
	}
	/* replay, teardown: open the gate */
	t0 = mdsc_lock(m);
	if (s->conn == c && !atomic_load(&c->dead)) {
		/* what waited for the session goes before anything submitted
		 * from now on, and before the caps messages parked during the
		 * setup (a flush of a file whose create waited): both wait for
		 * the end of the kick below */
		m->wait_kicking = true;
		s->state = SESS_OPEN;
		s->backoff_ns = 0;
		s->last_error = 0;
		s->opened_ns = now_mono_ns();
		s->round_failed = 0;            /* the next round starts at this address */
		if (was_open_before && s->open_idx != s->addr_idx)
			s->addr_moves++;
		s->open_idx = s->addr_idx;
		if (resume_id)
			s->reconnects++;
		m->want_session = true;         /* from now on the session is kept up */
	}
	pthread_cond_broadcast(&m->session_cond);
	mdsc_unlock(m, SEC_REPLAY, t0);

	if (resume_id)
		perf_inc(&m->c_reconnects, 1);
	else
		perf_inc(&m->c_opens, 1);
	if (resume_id || was_open_before)
		dinfo(CLIENT, "mds %s: session %llu %s (mds epoch %llu%s): %u replayed, %u re-sent", m->addr,
		      (unsigned long long)g.id, resumed ? "resumed" : "opened anew",
		      (unsigned long long)g.epoch, g.epoch != old_epoch ? ", mds restarted" : "", nreplay,
		      nretry);
	else
		dout(CLIENT, 1, "mds %s: session %llu open (lease %u ms)", m->addr, (unsigned long long)g.id,
		     g.lease_ms);
	/* tell the client first: caps held in a lost session are gone */
	if (m->ops.session_event && resume_id && !resumed)
		m->ops.session_event(m->ops_arg, MDSP_SESSION_EVICTED);
	else if (m->ops.session_event && (resumed || was_open_before))
		m->ops.session_event(m->ops_arg, resumed ? MDSP_SESSION_RECONNECT : MDSP_SESSION_OPEN);
	mdsc_kick_wait_list(m);
	t0 = mdsc_lock(m);
	if (s->conn == c && s->state == SESS_OPEN && !atomic_load(&c->dead))
		send_parked_locked(s, c);
	m->wait_kicking = false;
	pthread_cond_broadcast(&m->session_cond);
	mdsc_unlock(m, SEC_REPLAY, t0);
	mdsc_conn_put(c);
	return;

fail_conn:
	mdsc_conn_reap(c);
fail:
	t0 = mdsc_lock(m);
	attempt_failed_locked(m, r);
	s->state = resume_id ? SESS_RECONNECTING : SESS_NEW;
	pthread_cond_broadcast(&m->session_cond);
	backoff = s->round_failed ? 0 : s->backoff_ns;
	next_addr = atomic_load(&m->addr);
	mdsc_unlock(m, SEC_SESSION, t0);
	if (next_addr != addr && !backoff)
		dout(CLIENT, 1, "mds %s: %s failed: %s; trying %s", addr, resume_id ? "reconnect" : "session open",
		     why ? why : strerror(-r), next_addr);
	else
		dout(CLIENT, 1, "mds %s: %s failed: %s; next attempt (at %s) in %.2f s", addr,
		     resume_id ? "reconnect" : "session open", why ? why : strerror(-r), next_addr,
		     (double)backoff / 1e9);
}

/* ---- the session thread -------------------------------------------------------------- */

/* @wait_ns: as for mdsc_conn_send_wait() (SEND_NOWAIT: never wait for room). */
static int send_session_msg_slow(struct mds_client *m, struct mds_conn *c, uint32_t op, uint64_t id, uint64_t seq,
				 uint64_t wait_ns, uint32_t slow_ops, char *slow_op)
{
	struct mdsp_msg msg = { .type = MDSP_MSG_SESSION };
	struct mdsp_buf b;
	int r;

	msg.session.slow_ops = slow_ops;
	msg.session.slow_op = slow_op;
	msg.session.op = op;
	msg.session.session_id = id;
	msg.session.seq = seq;
	msg.session.client_name = m->name;
	memcpy(msg.session.client_uuid, m->uuid, sizeof(m->uuid));
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &msg);
	if (!r)
		r = mdsc_conn_send_wait(c, &b, wait_ns);
	mdsp_buf_free(&b);
	return r;
}

static int send_session_msg(struct mds_client *m, struct mds_conn *c, uint32_t op, uint64_t id, uint64_t seq,
			    uint64_t wait_ns)
{
	return send_session_msg_slow(m, c, op, id, seq, wait_ns, 0, NULL);
}

/* m->mutex held: how often the open session is renewed */
static uint64_t renew_interval_locked(struct mds_client *m)
{
	uint64_t iv = mdsc_secs_to_ns(CFG_client_session_renew_interval);
	uint64_t lease = (uint64_t)m->session.lease_ms * 1000000ull;

	lockdep_assert_held(&m->mutex);
	if (!iv)
		iv = 5000000000ull;
	if (lease && iv > lease / 3)
		iv = lease / 3;
	if (iv < 10000000ull)
		iv = 10000000ull;
	return iv;
}

/*
 * m->mutex held.  Requests waiting for the MDS longer than
 * client_wait_log_interval: say so once per interval, with what they wait
 * for and why (a mount that hangs on a dead MDS must not be silent).
 * *@next is pulled in to the next time a line may be due.
 */
static void wait_log_locked(struct mds_client *m, uint64_t now, uint64_t *next)
{
	struct mds_session *s = &m->session;
	uint64_t iv = mdsc_secs_to_ns(CFG_client_wait_log_interval), idx = 0, age, n;
	struct mdsc_req *r;
	uint32_t op, st;
	char why[160];

	lockdep_assert_held(&m->mutex);
	if (!iv)
		return;
	r = mdsc_req_next(m, &idx, UINT64_MAX);   /* the oldest request still in the map */
	if (!r) {
		if (s->wait_logged_ns)
			dinfo(CLIENT, "mds %s: no request waits any more", m->addr);
		s->wait_logged_ns = 0;
		return;
	}
	age = now > r->submit_ns ? now - r->submit_ns : 0;
	op = r->pub.args.op;
	st = atomic_load(&r->state);
	mdsc_req_put(r);
	if (age < iv) {
		if (r->submit_ns + iv < *next)
			*next = r->submit_ns + iv;
		return;
	}
	if (s->wait_logged_ns && now - s->wait_logged_ns < iv) {
		if (s->wait_logged_ns + iv < *next)
			*next = s->wait_logged_ns + iv;
		return;
	}
	n = xa_count(&m->requests);
	if (s->state == SESS_OPEN && s->conn)
		snprintf(why, sizeof(why), "the session is open: the MDS has not %s it yet",
			 (st & RS_GOT_REPLY) ? "made it durable (SAFE)" : "answered");
	else
		snprintf(why, sizeof(why), "no session (%s%s%s)", state_name(s->state),
			 s->last_error ? ": " : "", s->last_error ? strerror(-s->last_error) : "");
	dinfo(CLIENT, "mds %s: waiting for the MDS: %" PRIu64 " request%s outstanding, the oldest (tid %" PRIu64
	      ", %s) for %.0f s; %s", m->addr, n, n == 1 ? "" : "s", idx, mdsp_op_name(op), (double)age / 1e9, why);
	s->wait_logged_ns = now;
	if (now + iv < *next)
		*next = now + iv;
}

/*
 * m->mutex held, the session OPEN on @c: is it time to probe the other MDS
 * addresses?  Only with several, when @c has been silent for
 * client_mds_probe_after while we wait for the MDS (a renew or a request
 * outstanding: a request in the map is waiting for a reply or for SAFE),
 * and at most once per that interval.  *@next is pulled in to when it may be.
 */
static bool probe_due_locked(struct mds_client *m, struct mds_conn *c, uint64_t now, uint64_t *next)
{
	struct mds_session *s = &m->session;
	uint64_t after = mdsc_secs_to_ns(CFG_client_mds_probe_after), due;
	bool waiting;

	lockdep_assert_held(&m->mutex);
	if (m->naddrs < 2 || !after)
		return false;
	waiting = s->last_renew_sent_ns > s->last_renew_ack_ns ||
		  xa_count(&m->requests) > atomic_load(&m->nr_waiting);
	if (!waiting)
		return false;
	due = atomic_load(&c->last_rx_ns) + after;
	if (s->next_probe_ns > due)
		due = s->next_probe_ns;
	if (now >= due)
		return true;
	if (due < *next)
		*next = due;
	return false;
}

/*
 * Probe every MDS address but m->addrs[@cur], in list order after it: a
 * short bounded connect and AUTH HELLO each, which must be answered (a
 * stopped MDS accepts the connect but says nothing).  No lock held (session
 * thread; m->addrs is read-only).  Return: the index of the first that
 * answered, or -1.
 */
#define PROBE_MS 500
static int probe_others(struct mds_client *m, uint32_t cur)
{
	for (uint32_t k = 1; k < m->naddrs; k++) {
		uint32_t i = (cur + k) % m->naddrs;

		if (!mdsc_probe_answers(m, m->addrs[i], PROBE_MS))
			return (int)i;
	}
	return -1;
}

static void *session_main(void *arg)
{
	struct mds_client *m = arg;
	struct mds_session *s = &m->session;
	uint64_t t0, now, next, iv, tmo, id, seq;
	struct mds_conn *c;

	pthread_setname_np(pthread_self(), "mdsc-session");
	mdsc_on_session_thread = true;
	t0 = mdsc_lock(m);
	while (!m->stopping) {
		m->kick = false;
		now = now_mono_ns();
		next = now + 1000000000ull;
		c = s->conn;
		if (c && atomic_load(&c->dead)) {
			s->conn = NULL;
			drop_parked_locked(s);
			if (s->state != SESS_CLOSING && s->state != SESS_CLOSED && s->state != SESS_EVICTED)
				s->state = s->id ? SESS_RECONNECTING : SESS_NEW;
			s->next_attempt_ns = now;       /* first attempt at once, then back off */
			pthread_cond_broadcast(&m->session_cond);
			mdsc_unlock(m, SEC_SESSION, t0);
			mdsc_conn_reap(c);
			t0 = mdsc_lock(m);
			continue;
		}
		if (!c && (m->want_session || s->id) && s->state != SESS_CLOSING && s->state != SESS_CLOSED) {
			if (now >= s->next_attempt_ns) {
				mdsc_unlock(m, SEC_SESSION, t0);
				connect_session(m);
				t0 = mdsc_lock(m);
				continue;
			}
			if (s->next_attempt_ns < next)
				next = s->next_attempt_ns;
		}
		if (c && s->state == SESS_OPEN) {
			iv = renew_interval_locked(m);
			tmo = mdsc_secs_to_ns(CFG_client_session_timeout);
			if (mdsc_conn_stalled_ns(c, now) > mdsc_send_stall_ns()) {
				/* the writer made no progress: with client_session_timeout 0
				 * nothing else would end a socket the MDS stopped reading */
				mdsc_conn_mark_dead(c, false, 0, NULL);
				mdsc_unlock(m, SEC_SESSION, t0);
				derr(CLIENT, "mds %s: nothing could be sent for %.1f s: declaring the connection dead",
				     m->addr, (double)mdsc_send_stall_ns() / 1e9);
				t0 = mdsc_lock(m);
				continue;
			}
			if (tmo && s->last_renew_sent_ns > s->last_renew_ack_ns &&
			    mono_since(now, atomic_load(&c->last_rx_ns)) > tmo) {
				mdsc_conn_mark_dead(c, false, 0, NULL);
				mdsc_unlock(m, SEC_SESSION, t0);
				derr(CLIENT, "mds %s: nothing heard for %.1f s with a renew outstanding: "
				     "declaring the connection dead", m->addr, (double)tmo / 1e9);
				t0 = mdsc_lock(m);
				continue;
			}
			if (probe_due_locked(m, c, now, &next)) {
				/* a silent MDS: has another one taken the rank? */
				uint64_t after = mdsc_secs_to_ns(CFG_client_mds_probe_after), quiet;
				const char *from = m->addr;
				uint32_t cur = s->addr_idx;
				int j;

				s->next_probe_ns = now + after;
				mdsc_conn_get(c);
				mdsc_unlock(m, SEC_SESSION, t0);
				j = probe_others(m, cur);
				t0 = mdsc_lock(m);
				s->probes++;
				quiet = mono_since(now_mono_ns(), atomic_load(&c->last_rx_ns));
				if (j >= 0 && s->conn == c && !atomic_load(&c->dead) && quiet >= after) {
					set_addr_locked(m, (uint32_t)j);
					s->round_failed = 0;
					s->probe_moves++;
					mdsc_conn_mark_dead(c, false, 0, NULL);
					mdsc_unlock(m, SEC_SESSION, t0);
					derr(CLIENT, "mds %s: nothing heard for %.1f s while waiting for it, and the mds at %s "
					     "answers: following it (the session is resumed there)", from,
					     (double)quiet / 1e9, m->addrs[j]);
				} else {
					mdsc_unlock(m, SEC_SESSION, t0);
					dout(CLIENT, 1, "mds %s: silent for %.1f s; %s", from, (double)quiet / 1e9,
					     j >= 0 ? "it spoke again meanwhile: staying" :
					     "no other mds address answers: staying");
				}
				mdsc_conn_put(c);
				t0 = mdsc_lock(m);
				continue;
			}
			if (now >= s->last_renew_sent_ns + iv) {
				uint32_t slow = m->slow_ops;
				char *slow_op = m->slow_op ? strdup(m->slow_op) : NULL;

				s->last_renew_sent_ns = now;
				seq = ++s->renew_seq;
				id = s->id;
				mdsc_conn_get(c);
				mdsc_unlock(m, SEC_SESSION, t0);
				/*
				 * Never wait for room here: this thread must stay
				 * free to run the watchdogs above.  A renew is queued
				 * even past the limit; one that does not go out still
				 * counts as outstanding, so the watchdog judges the
				 * silence.
				 */
				send_session_msg_slow(m, c, MDSP_SESSION_REQUEST_RENEW, id, seq, SEND_NOWAIT, slow, slow_op);
				free(slow_op);
				mdsc_conn_put(c);
				t0 = mdsc_lock(m);
				continue;
			}
			if (s->last_renew_sent_ns + iv < next)
				next = s->last_renew_sent_ns + iv;
			if (tmo && s->last_renew_sent_ns > s->last_renew_ack_ns &&
			    atomic_load(&c->last_rx_ns) + tmo < next)
				next = atomic_load(&c->last_rx_ns) + tmo + 1;
		}
		wait_log_locked(m, now, &next);
		if (!m->kick)
			mdsc_cond_wait(m, &m->tick_cond, next, SEC_SESSION, &t0);
	}
	mdsc_unlock(m, SEC_SESSION, t0);
	return NULL;
}

/*
 * mdsc_session_init - the session table's own state: its condition
 * variables, the client's uuid, state NEW.  No thread runs yet.
 */
void mdsc_session_init(struct mds_client *m)
{
	mdsc_cond_init(&m->session_cond);
	mdsc_cond_init(&m->tick_cond);
	if (getrandom(m->uuid, sizeof(m->uuid), 0) != (ssize_t)sizeof(m->uuid)) {
		uint64_t x = now_real_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(m->uuid, &x, sizeof(x));
		memcpy(m->uuid + 8, &m, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	m->session.state = SESS_NEW;
}

/*
 * mdsc_session_fini - undo mdsc_session_init.  The session thread is joined
 * and every connection reaped (mdsc_session_close), or none ever ran.
 */
void mdsc_session_fini(struct mds_client *m)
{
	assert(!m->session.conn && !m->session.handshaking);
	pthread_cond_destroy(&m->session_cond);
	pthread_cond_destroy(&m->tick_cond);
	memset(m->session.secret, 0, sizeof(m->session.secret));
	memset(m->key, 0, sizeof(m->key));
	free(m->auth_name);
	free(m->keyring_path);
	m->auth_name = m->keyring_path = NULL;
}

int mdsc_session_thread_start(struct mds_client *m)
{
	int r = pthread_create(&m->session_thread, NULL, session_main, m);

	return r ? -r : 0;
}

int mdsc_open_session(struct mds_client *m, int timeout_ms)
{
	struct mds_session *s = &m->session;
	uint64_t deadline = now_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	uint64_t t0;
	bool ok, rejected;
	int err;

	t0 = mdsc_lock(m);
	s->rejected = false;
	m->want_session = true;
	if (!s->conn)
		s->next_attempt_ns = 0;
	mdsc_kick_locked(m);
	/* open, and what waited for it sent (wait_kicking): a request made
	 * right after goes straight out */
	while ((s->state != SESS_OPEN || m->wait_kicking) && !s->rejected && !m->stopping) {
		if (mdsc_cond_wait(m, &m->session_cond, deadline, SEC_SESSION, &t0) == -ETIMEDOUT)
			break;
	}
	ok = s->state == SESS_OPEN;
	err = s->last_error;
	rejected = s->rejected;
	if (!ok && !s->id && !atomic_load(&m->nr_waiting))
		m->want_session = false;        /* nobody waits for it: stop trying */
	mdsc_unlock(m, SEC_SESSION, t0);
	if (ok)
		return 0;
	if (!rejected && err != -ECONNREFUSED && err != -EINVAL && err != -EHOSTUNREACH)
		err = -ETIMEDOUT;
	if (rejected && (err == -ENOKEY || err == -EKEYREJECTED || err == -EACCES)) {
		char msg[sizeof(s->auth_error)];

		t0 = mdsc_lock(m);
		memcpy(msg, s->auth_error, sizeof(msg));
		mdsc_unlock(m, SEC_SESSION, t0);
		derr(CLIENT, "no session with the mds at %s: authentication as %s failed: %s", m->addr, m->auth_name,
		     *msg ? msg : strerror(-err));
		return err;
	}
	derr(CLIENT, "no session with the mds at %s within %d ms: %s%s", m->addr, timeout_ms, strerror(-err),
	     err == -ECONNREFUSED ? " (is loligo-mds running there? see client_mds_addr)" : "");
	return err;
}

/* Log, one line each (the first UNMOUNT_LIST_MAX), the requests not SAFE
 * that an unmount gives up on, and what each may have cost.  No lock held. */
#define UNMOUNT_LIST_MAX 32
static void unmount_report(struct mds_client *m)
{
	double bound = (double)mdsc_secs_to_ns(CFG_client_unmount_timeout) / 1e9;
	uint64_t idx = 0, nunsafe = 0, nsent = 0, nunsent = 0, n = 0;
	struct mdsc_req *r;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		uint32_t st = atomic_load(&r->state);
		const struct mdsp_request *a = &r->pub.args;
		const char *what;

		if (st & (RS_GOT_SAFE | RS_ABORTED)) {
			mdsc_req_put(r);
			continue;
		}
		if (st & RS_GOT_UNSAFE) {
			what = "answered UNSAFE: applied by the MDS, not known to be durable (lost if the MDS "
			       "crashed before writing its journal)";
			nunsafe++;
		} else if (atomic_load(&r->sent_gen)) {
			what = "sent, never answered: the MDS may or may not have run it";
			nsent++;
		} else {
			what = "never sent: not applied";
			nunsent++;
		}
		if (n++ < UNMOUNT_LIST_MAX)
			derr(CLIENT, "mds %s: unmount: giving up on tid %llu %s %s%s(ino %llu): %s", m->addr,
			     (unsigned long long)r->tid, mdsp_op_name(a->op), a->name ? a->name : "",
			     a->name ? " " : "", (unsigned long long)a->ino, what);
		mdsc_req_put(r);
	}
	if (n)
		derr(CLIENT, "mds %s: unmount: %llu request(s) not safe within client_unmount_timeout (%.1f s): "
		     "%llu answered UNSAFE, %llu unanswered, %llu never sent%s", m->addr, (unsigned long long)n, bound,
		     (unsigned long long)nunsafe, (unsigned long long)nsent, (unsigned long long)nunsent,
		     n > UNMOUNT_LIST_MAX ? " (the first ones listed above)" : "");
}

/*
 * What an unmount waits for: every request SAFE, until @deadline_ns
 * (client_unmount_timeout from the start of the unmount), also while the
 * session is away: an MDS that comes back within the bound gets the UNSAFE
 * requests replayed, which makes them durable.  What is not SAFE by then is
 * logged, request by request, and the caller gives up on it.  No lock held.
 */
static void unmount_sync(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t t0 = now_mono_ns(), idx = 0, n = 0, lt;
	uint64_t tmo = deadline_ns > t0 ? deadline_ns - t0 : 0;
	struct mds_session *s = &m->session;
	struct mdsc_req *r;
	bool open;
	int ret;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		if (!(atomic_load(&r->state) & (RS_GOT_SAFE | RS_ABORTED)))
			n++;
		mdsc_req_put(r);
	}
	if (!n)
		return;
	lt = mdsc_lock(m);
	open = s->state == SESS_OPEN && s->conn;
	mdsc_unlock(m, SEC_SESSION, lt);
	if (!open && tmo)
		dinfo(CLIENT, "mds %s: unmount: waiting up to %.1f s more (client_unmount_timeout) for the MDS to "
		      "come back: %llu request(s) not safe yet", m->addr, (double)tmo / 1e9, (unsigned long long)n);
	ret = tmo ? mdsc_sync_until(m, deadline_ns) : -ETIMEDOUT;
	if (ret == -ETIMEDOUT)
		unmount_report(m);
}

void mdsc_session_close(struct mds_client *m, uint64_t unmount_deadline_ns)
{
	struct mds_session *s = &m->session;
	uint64_t t0, deadline, id;
	struct mds_conn *c = NULL;

	/* bounded: teardown must not hang on a dead MDS */
	unmount_sync(m, unmount_deadline_ns);
	t0 = mdsc_lock(m);
	if (s->state == SESS_OPEN && s->conn) {
		s->state = SESS_CLOSING;
		c = s->conn;
		mdsc_conn_get(c);
		id = s->id;
		mdsc_unlock(m, SEC_SESSION, t0);
		/* bounded: a sender stuck on a stalled socket must not hang the unmount */
		send_session_msg(m, c, MDSP_SESSION_REQUEST_CLOSE, id, 0, CLOSE_WAIT_MS * 1000000ull);
		mdsc_conn_put(c);
		deadline = now_mono_ns() + CLOSE_WAIT_MS * 1000000ull;
		t0 = mdsc_lock(m);
		while (s->state == SESS_CLOSING && s->conn && !atomic_load(&s->conn->dead))
			if (mdsc_cond_wait(m, &m->session_cond, deadline, SEC_SESSION, &t0) == -ETIMEDOUT)
				break;
		if (s->state == SESS_CLOSED) {
			mdsc_unlock(m, SEC_SESSION, t0);
			dout(CLIENT, 1, "mds %s: session %llu closed", m->addr, (unsigned long long)id);
			t0 = mdsc_lock(m);
		}
	}
	m->stopping = true;
	if (s->handshaking)             /* an MDS that accepted but does not answer */
		mdsc_conn_mark_dead(s->handshaking, false, 0, NULL);
	mdsc_kick_locked(m);
	mdsc_unlock(m, SEC_SESSION, t0);
	pthread_join(m->session_thread, NULL);

	t0 = mdsc_lock(m);
	c = s->conn;
	s->conn = NULL;
	drop_parked_locked(s);
	s->state = SESS_CLOSED;
	pthread_cond_broadcast(&m->session_cond);
	mdsc_unlock(m, SEC_SESSION, t0);
	if (c)
		mdsc_conn_reap(c);
}

/* ---- caps, state, admin ------------------------------------------------------------------ */

void mdsc_flush_hint(struct mds_client *m, uint64_t tid)
{
	uint64_t covered = atomic_load(&m->flush_hint_tid), upto, t0, id = 0;
	struct mds_conn *c = NULL;

	if (tid <= covered)
		return;
	t0 = mdsc_lock(m);
	if (m->session.state == SESS_OPEN && m->session.conn && !m->wait_kicking) {
		c = m->session.conn;
		id = m->session.id;
		mdsc_conn_get(c);
	}
	mdsc_unlock(m, SEC_OTHER, t0);
	if (!c)
		return;
	/* one waiter sends it for all the requests made so far; the tids
	 * of those not sent yet go after the hint on the same connection
	 * and are written at most mds_journal_max_delay later.  A waiter
	 * whose tid another's hint does not reach sends its own */
	upto = atomic_load(&m->last_tid);
	do {
		if (tid <= covered) {
			mdsc_conn_put(c);
			return;
		}
	} while (!atomic_compare_exchange_weak(&m->flush_hint_tid, &covered, upto));
	if (!send_session_msg(m, c, MDSP_SESSION_REQUEST_FLUSH_JOURNAL, id, 0, SEND_NOWAIT))
		perf_inc(&m->c_flush_hints, 1);
	else
		/* not sent: the next wait for these tids tries again */
		atomic_compare_exchange_strong(&m->flush_hint_tid, &upto, covered);
	mdsc_conn_put(c);
}

static int send_caps(struct mds_client *m, const struct mdsp_caps *caps, bool corked)
{
	struct mdsp_msg msg = { .type = MDSP_MSG_CAPS };
	struct mds_conn *c = NULL;
	struct mdsp_buf b;
	uint64_t t0;
	int r;

	msg.caps = *caps;
	mdsp_buf_init(&b);
	r = mdsp_encode(&b, &msg);
	if (r) {
		mdsp_buf_free(&b);
		return r;
	}
	t0 = mdsc_lock(m);
	if (m->session.state == SESS_OPEN && m->session.conn && !m->wait_kicking) {
		c = m->session.conn;
		mdsc_conn_get(c);
	} else if (m->session.conn && (setting_up(&m->session) || m->session.state == SESS_OPEN)) {
		/* the ack of a revoke the reader delivered while the replays
		 * are still going: after them, not never (the MDS would wait
		 * for it until mds_session_timeout and evict us); during the
		 * wait list's kick, after it.  Past the bound, in the kick, it
		 * goes now rather than never */
		r = park_frame_locked(&m->session, &b);
		if (r && m->session.state == SESS_OPEN) {
			c = m->session.conn;
			mdsc_conn_get(c);
		} else {
			mdsc_unlock(m, SEC_OTHER, t0);
			mdsp_buf_free(&b);
			return r;
		}
	}
	mdsc_unlock(m, SEC_OTHER, t0);
	if (!c) {
		mdsp_buf_free(&b);
		return -ENOTCONN;
	}
	/* documented never to block */
	r = corked ? mdsc_conn_send_corked_nowait(c, &b) : mdsc_conn_send_wait(c, &b, SEND_NOWAIT);
	mdsp_buf_free(&b);
	mdsc_conn_put(c);
	return r;
}

int mdsc_send_caps(struct mds_client *m, const struct mdsp_caps *caps)
{
	return send_caps(m, caps, false);
}

int mdsc_send_caps_corked(struct mds_client *m, const struct mdsp_caps *caps)
{
	return send_caps(m, caps, true);
}

uint64_t mdsc_max_file_size(struct mds_client *m)
{
	return atomic_load(&m->max_file_size);
}

void mdsc_set_reclaim(struct mds_client *m, uint64_t sid, const uint8_t *uuid)
{
	m->reclaim_sid = uuid ? sid : 0;
	if (uuid)
		memcpy(m->reclaim_uuid, uuid, sizeof(m->reclaim_uuid));
}

uint64_t mdsc_session_ident(struct mds_client *m, uint8_t *uuid)
{
	uint64_t t0 = mdsc_lock(m), id = m->session.state == SESS_OPEN ? m->session.id : 0;

	mdsc_unlock(m, SEC_OTHER, t0);
	memcpy(uuid, m->uuid, sizeof(m->uuid));   /* fixed at create */
	return id;
}

bool mdsc_is_open(struct mds_client *m)
{
	uint64_t t0 = mdsc_lock(m);
	bool open = m->session.state == SESS_OPEN;

	mdsc_unlock(m, SEC_OTHER, t0);
	return open;
}

struct json_object *mdsc_session_json(struct mds_client *m)
{
	struct mds_session *s = &m->session;
	struct json_object *o = json_object_new_object();
	uint64_t now = now_mono_ns(), t0;

	if (!o)
		return NULL;
	t0 = mdsc_lock(m);
	json_object_object_add(o, "mds", json_object_new_string(m->addr));
	if (m->naddrs > 1) {
		struct json_object *a = json_object_new_array();

		for (uint32_t i = 0; a && i < m->naddrs; i++)
			json_object_array_add(a, json_object_new_string(m->addrs[i]));
		json_object_object_add(o, "mds_addrs", a);
	}
	json_object_object_add(o, "connected", json_object_new_boolean(s->conn && !atomic_load(&s->conn->dead)));
	json_object_object_add(o, "address_moves", json_object_new_int64(s->addr_moves));
	json_object_object_add(o, "probe_moves", json_object_new_int64(s->probe_moves));
	json_object_object_add(o, "probes", json_object_new_int64(s->probes));
	json_object_object_add(o, "client", json_object_new_string(m->name));
	json_object_object_add(o, "state", json_object_new_string(state_name(s->state)));
	json_object_object_add(o, "session_id", json_object_new_uint64(s->id));
	json_object_object_add(o, "conn_gen", json_object_new_uint64(s->gen));
	json_object_object_add(o, "seq", json_object_new_uint64(s->renew_seq));
	json_object_object_add(o, "lease_ms", json_object_new_int64(s->lease_ms));
	json_object_object_add(o, "mds_epoch", json_object_new_uint64(s->mds_epoch));
	json_object_object_add(o, "last_renew_ack_age_ms",
			       json_object_new_double(s->last_renew_ack_ns ?
						      (double)(now - s->last_renew_ack_ns) / 1e6 : -1));
	json_object_object_add(o, "reconnects", json_object_new_int64(s->reconnects));
	json_object_object_add(o, "max_file_size", json_object_new_int64((int64_t)atomic_load(&m->max_file_size)));
	json_object_object_add(o, "stale", json_object_new_int64(s->stale_count));
	if (s->last_error)
		json_object_object_add(o, "last_error", json_object_new_string(strerror(-s->last_error)));
	mdsc_unlock(m, SEC_OTHER, t0);
	return o;
}
