/*
 * mds_client.c - the client's MDS session layer: requests and replies.
 *
 * Every metadata operation of the client is a request to the MDS.  This
 * file gives each one a transaction id, keeps it in the request map until
 * the MDS says it is durable, and matches replies to it; the session itself
 * (connection, handshake, renewals, reconnect and replay) lives in
 * mds_client_session.c.  The shape is the one the Linux ceph client reached
 * with its mutex-contention series (DESIGN.md section 6), because the
 * obvious shape -- one client mutex around the request tree, the session
 * table and the send -- serialises every thread of a busy mount on it:
 *
 *  - tids come from an atomic counter and oldest_tid is an atomic the send
 *    path reads with no lock;
 *  - the request map is a common/xarray keyed by tid.  handle_reply, on the
 *    connection's reader thread, finds its request under rcu_read_lock()
 *    and pins it with a refcount increment that fails once the count hit
 *    zero; requests are freed with call_rcu(), so a reader that found one
 *    never touches freed memory.  Iteration is in tid order, which is the
 *    order of replay and what makes oldest_tid the first key of the map;
 *  - mdsc->mutex guards the session table only.  Registration and session
 *    choice are two short sections; encoding and sending happen outside it;
 *  - a request submitted while there is no open session (none yet, or the
 *    MDS is being reconnected) waits on the wait list under wait_list_lock
 *    and is kicked when the session opens.
 *
 * A request gets an UNSAFE reply when the MDS applied it in memory and a
 * SAFE one when it is journaled (reads get one final reply, which counts as
 * SAFE).  mdsc_do_request() returns on the first reply; the request stays in
 * the map until SAFE so that an MDS restart can replay it and so that
 * oldest_tid tells the MDS which completed results it may forget.
 * mdsc_wait_safe() and mdsc_sync() (fsync, syncfs) wait for SAFE.
 *
 * oldest_tid is what every request tells the MDS: "I will never resend a
 * tid below this", so the MDS may forget their completed results.  It must
 * never pass a request that is still live (registered, not yet SAFE or
 * given up): the MDS would trim that request's result, and a replay after a
 * reconnect would execute it twice.  The send path reads it with no lock;
 * completions publish it, also with no lock, and this is why that holds:
 *
 *  (a) tids are allocated and inserted in one client-mutex section, and
 *      after the insert the section stores registered_tid = tid (release).
 *      So every tid <= registered_tid is in the map (or was never inserted,
 *      on -ENOMEM, and will never be live), and every tid registered later
 *      is > registered_tid.
 *  (b) A completion loads R = registered_tid (acquire) and then scans the
 *      map under RCU for its first key F other than its own.  The scan is
 *      not a snapshot: it may pass a slot while it is empty and miss a key
 *      inserted there afterwards.  But a request with tid <= R was in the
 *      map before the scan began, and an RCU scan finds every key present
 *      for its whole duration (common/xarray.c never moves a live entry),
 *      so if it is still live the scan finds it or a smaller key first:
 *      F <= it.  A live request with tid > R is >= R + 1.
 *  (c) The candidate min(F, R + 1) (R + 1 when the scan found nothing) is
 *      therefore <= every request live at any moment after the scan began,
 *      and since tids only grow, at every later moment too.  Publishing the
 *      maximum of such candidates (a CAS loop) keeps that, and keeps
 *      oldest_tid monotonic.
 *
 * Without the clamp to R + 1 (the code before issue 8), a scan that ran
 * past the last key, was preempted there and then found k + 1 published
 * k + 1 while k, registered meanwhile, was live; tests/unit/
 * test_mdsc_oldest.c forces exactly that interleaving.
 *
 * Measurements: every client-mutex section records its hold time in a
 * histogram of `perf dump` group "mds_client" (hold_submit_request,
 * hold_do_request, hold_handle_reply, hold_replay, hold_session,
 * hold_other).  handle_reply takes no client mutex: it records a
 * zero-length hold per reply, so the histogram counts the replies and
 * says so (p99 0).  USDT probes (provider "loligo") mark
 * mdsc_submit_*, mdsc_do_request_*, mdsc_handle_reply_* entry and return,
 * and mdsc_mutex_hold(section, ns) fires on every release.
 */
#include "client/mds_client_int.h"
#include "client/intr.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"

static const char *const section_names[SEC_MAX] = {
	[SEC_SUBMIT] = "hold_submit_request",
	[SEC_DO_REQUEST] = "hold_do_request",
	[SEC_HANDLE_REPLY] = "hold_handle_reply",
	[SEC_REPLAY] = "hold_replay",
	[SEC_SESSION] = "hold_session",
	[SEC_OTHER] = "hold_other",
};

static pthread_condattr_t mono_attr;
static pthread_once_t mono_once = PTHREAD_ONCE_INIT;

static void mono_attr_init(void)
{
	pthread_condattr_init(&mono_attr);
	pthread_condattr_setclock(&mono_attr, CLOCK_MONOTONIC);
}

void mdsc_cond_init(pthread_cond_t *c)
{
	pthread_once(&mono_once, mono_attr_init);
	pthread_cond_init(c, &mono_attr);
}

/* ---- the client mutex, measured -------------------------------------- */

uint64_t mdsc_lock(struct mds_client *m)
{
	pthread_mutex_lock(&m->mutex);
	return now_mono_ns();
}

void mdsc_unlock(struct mds_client *m, enum mdsc_section sec, uint64_t t0)
{
	uint64_t held = now_mono_ns() - t0;

	pthread_mutex_unlock(&m->mutex);
	hist_add(&m->hold[sec], held);
	DTRACE_PROBE2(loligo, mdsc_mutex_hold, (int)sec, held);
}

int mdsc_cond_wait(struct mds_client *m, pthread_cond_t *cond, uint64_t deadline_ns,
		   enum mdsc_section sec, uint64_t *t0)
{
	struct timespec ts;
	int r;

	hist_add(&m->hold[sec], now_mono_ns() - *t0);
	if (deadline_ns) {
		ts = ns_to_timespec(deadline_ns);
		r = pthread_cond_timedwait(cond, &m->mutex, &ts);
	} else {
		r = pthread_cond_wait(cond, &m->mutex);
	}
	*t0 = now_mono_ns();
	return r == ETIMEDOUT ? -ETIMEDOUT : 0;
}

uint64_t mdsc_secs_to_ns(enum cfg_opt_id id)
{
	double s = cfg_double(id);

	return s <= 0 ? 0 : (uint64_t)(s * 1e9);
}

/* ---- requests: lifetime ------------------------------------------------ */

static inline struct mdsc_req *to_req(struct mds_request *pub)
{
	return caa_container_of(pub, struct mdsc_req, pub);
}

struct mds_request *mdsc_request_new(struct mds_client *m, uint32_t op)
{
	struct mdsc_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->mdsc = m;
	atomic_init(&r->ref, 1);
	pthread_mutex_init(&r->lock, NULL);
	mdsc_cond_init(&r->cond);
	CDS_INIT_LIST_HEAD(&r->wait_item);
	r->pub.args.op = op;
	r->pub.priv = r;
	return &r->pub;
}

static void req_free_rcu(struct rcu_head *head)
{
	struct mdsc_req *r = caa_container_of(head, struct mdsc_req, rcu);
	struct mdsp_msg tmp = { .type = MDSP_MSG_REQUEST };

	tmp.request = r->pub.args;
	mdsp_msg_free(&tmp);
	if (r->reply_msg) {
		mdsp_msg_free(r->reply_msg);
		free(r->reply_msg);
	}
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void mdsc_req_get(struct mdsc_req *r)
{
	atomic_fetch_add_explicit(&r->ref, 1, memory_order_relaxed);
}

/*
 * A reference on a request found in the map under RCU: fails once the count
 * reached zero (the request is on its way to call_rcu).
 * Context: rcu_read_lock() held.
 */
bool mdsc_req_get_unless_zero(struct mdsc_req *r)
{
	int v = atomic_load_explicit(&r->ref, memory_order_relaxed);

	while (v > 0) {
		if (atomic_compare_exchange_weak_explicit(&r->ref, &v, v + 1, memory_order_acquire,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

void mdsc_req_put(struct mdsc_req *r)
{
	if (atomic_fetch_sub_explicit(&r->ref, 1, memory_order_acq_rel) == 1)
		call_rcu(&r->rcu, req_free_rcu);
}

/*
 * mdsc_req_next - walk the request map in tid order: the first request with
 * a tid in [*@idx, @last] that still has a reference to take, pinned (the
 * caller mdsc_req_put()s it); *@idx is set to its tid, so the next call
 * takes *@idx + 1.  Requests whose count already reached zero are stepped
 * over.  Return: NULL at the end of the map or past @last.
 * Context: no lock; the lookup runs under rcu_read_lock() alone.
 */
struct mdsc_req *mdsc_req_next(struct mds_client *m, uint64_t *idx, uint64_t last)
{
	struct mdsc_req *r;

	for (;;) {
		rcu_read_lock();
		r = xa_find(&m->requests, idx);
		if (r && *idx <= last && !mdsc_req_get_unless_zero(r)) {
			rcu_read_unlock();
			(*idx)++;
			continue;
		}
		rcu_read_unlock();
		return r && *idx <= last ? r : NULL;
	}
}

void mdsc_request_put(struct mds_request *pub)
{
	if (pub)
		mdsc_req_put(to_req(pub));
}

void mdsc_request_get(struct mds_request *pub)
{
	mdsc_req_get(to_req(pub));
}

/* ---- the request map and oldest_tid ------------------------------------ */

#ifdef MDSC_TEST_HOOKS
void (*mdsc_test_published)(struct mds_client *m, uint64_t candidate);
#endif

/*
 * Publish the oldest_tid that holds once @done_tid has left the map: the
 * first key other than @done_tid, clamped to one past the registered_tid
 * loaded before the scan (the argument is at the top of the file).  It is
 * published before the erase, so whoever sees the request gone (sync, a
 * woken waiter) sees oldest_tid moved too.  No lock: the map is read under
 * RCU, and the max keeps concurrent completions from moving the value
 * backwards (each candidate is safe on its own).
 */
static void update_oldest(struct mds_client *m, uint64_t done_tid)
{
	uint64_t idx = 0, v, cur, reg;
	void *first;

	/* every tid <= reg is in the map or done; acquire: the scan below
	 * sees each of those inserts */
	reg = atomic_load_explicit(&m->registered_tid, memory_order_acquire);
	rcu_read_lock();
	first = xa_find(&m->requests, &idx);
	if (first && idx == done_tid) {
		idx = done_tid + 1;
		first = done_tid == UINT64_MAX ? NULL : xa_find(&m->requests, &idx);
	}
	rcu_read_unlock();
	v = reg == UINT64_MAX ? reg : reg + 1;
	if (first && idx < v)
		v = idx;
	cur = atomic_load_explicit(&m->oldest_tid, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(&m->oldest_tid, &cur, v,
								 memory_order_release,
								 memory_order_relaxed))
		;
#ifdef MDSC_TEST_HOOKS
	if (mdsc_test_published)
		mdsc_test_published(m, v);
#endif
}

/* Take @r out of the map (once) and drop the map's reference. */
void mdsc_unregister(struct mds_client *m, struct mdsc_req *r)
{
	if (!(atomic_fetch_and(&r->state, ~RS_REGISTERED) & RS_REGISTERED))
		return;
	update_oldest(m, r->tid);
	xa_erase(&m->requests, r->tid);
	mdsc_req_put(r);
}

/* Take @r off the wait list if it is on it.  Lock: wait_list_lock (taken). */
static void wait_list_remove(struct mds_client *m, struct mdsc_req *r)
{
	bool was = false;

	pthread_mutex_lock(&m->wait_list_lock);
	if (atomic_load(&r->state) & RS_WAITING) {
		cds_list_del_init(&r->wait_item);
		atomic_fetch_and(&r->state, ~RS_WAITING);
		atomic_fetch_sub(&m->nr_waiting, 1);
		was = true;
	}
	pthread_mutex_unlock(&m->wait_list_lock);
	if (was)
		mdsc_req_put(r);
}

/*
 * mdsc_abort_request - give up on @r with @err: wake its waiters, take it
 * off the wait list and out of the map.  @only_unanswered: leave a request
 * that already got a reply alone.  Return: true if this call aborted it.
 */
bool mdsc_abort_request(struct mds_client *m, struct mdsc_req *r, int err, bool only_unanswered)
{
	uint32_t st;

	pthread_mutex_lock(&r->lock);
	st = atomic_load(&r->state);
	if ((st & (RS_GOT_SAFE | RS_ABORTED)) || (only_unanswered && (st & RS_GOT_REPLY))) {
		pthread_mutex_unlock(&r->lock);
		return false;
	}
	r->abort_err = err;
	if (!(st & RS_GOT_REPLY))
		r->pub.result = err;
	atomic_fetch_or(&r->state, RS_ABORTED);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	mdsc_req_kick(r);
	wait_list_remove(m, r);
	mdsc_unregister(m, r);
	return true;
}

/* ---- sending ------------------------------------------------------------- */

/*
 * Encode @r on a copy of its args (a replay may send it concurrently with
 * the original sender) and queue it on @c.  No lock needed: the frame's
 * sequence number and crc are set under the connection's out_lock.
 */
int mdsc_send_request(struct mds_client *m, struct mds_conn *c, struct mdsc_req *r, uint32_t flags)
{
	struct mdsp_msg msg = { .type = MDSP_MSG_REQUEST };
	struct mdsp_buf b;
	int ret;

	msg.request = r->pub.args;
	msg.request.tid = r->tid;
	msg.request.oldest_tid = atomic_load_explicit(&m->oldest_tid, memory_order_acquire);
	if (msg.request.oldest_tid > r->tid)    /* cannot happen (see the top); never trim ourselves */
		msg.request.oldest_tid = r->tid;
	msg.request.attempt = atomic_fetch_add(&r->attempts, 1) + 1;
	msg.request.flags = flags | (r->pub.args.flags & (MDSP_REQ_WANT_INOS | MDSP_REQ_UMASK));
	/* an ino delegated on an earlier connection: perhaps by an MDS that
	 * restarted since and forgot it (see mds_request.want_ino_gen) */
	if (r->pub.args.want_ino && r->pub.want_ino_gen && r->pub.want_ino_gen != c->gen)
		msg.request.flags |= MDSP_REQ_RETRY;
	/* a replay must get back the very inode its UNSAFE reply named: data
	 * and children hang off that ino (mds/prealloc.c); an asynchronous
	 * create names its delegated ino on every attempt */
	if (!r->pub.args.want_ino)
		msg.request.want_ino = (flags & MDSP_REQ_REPLAY) ? atomic_load(&r->replay_ino) : 0;
	mdsp_buf_init(&b);
	ret = mdsp_encode(&b, &msg);
	if (ret) {
		derr(CLIENT, "mds request tid %llu (%s): cannot encode: %s",
		     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op), strerror(-ret));
		mdsp_buf_free(&b);
		return ret;
	}
	perf_inc(&m->c_sent, 1);                /* before the send: the reply may beat us back */
	/* a first send that nobody waits for may share a send with the next */
	if (!flags && r->pub.on_reply)
		ret = mdsc_conn_send_corked(c, &b);
	else
		ret = mdsc_conn_send(c, &b);
	mdsp_buf_free(&b);
	if (!ret) {
		dout(CLIENT, 15, "mds request tid %llu %s attempt %u flags %#x sent", (unsigned long long)r->tid,
		     mdsp_op_name(r->pub.args.op), msg.request.attempt, flags);
	}
	return ret;
}

/*
 * do_request - send @r on the open session, or park it on the wait list.
 * The client mutex covers only the session choice and binding the request
 * to the connection's generation; encoding and sending run after it.
 * While the wait list of a session that just opened is being sent
 * (wait_kicking), a new request waits for that to end, so that it goes
 * after them (@kicked: it is one of those being sent).
 * Caller holds a reference on @r; no lock held.
 */
static void do_request(struct mds_client *m, struct mdsc_req *r, bool kicked)
{
	struct mds_session *s;
	struct mds_conn *c = NULL;
	bool stopping, waited = false;
	uint64_t t0;

	if (atomic_load(&r->state) & (RS_ABORTED | RS_GOT_REPLY))
		return;
	if (atomic_load_explicit(&m->evicted, memory_order_acquire)) {
		mdsc_abort_request(m, r, -EIO, false);    /* evicted: nothing is sent any more */
		return;
	}
	if (!kicked)
		lockdep_might_wait("the wait list's kick (mdsc->wait_kicking)");
	t0 = mdsc_lock(m);
	s = &m->session;
	while (!kicked && m->wait_kicking && s->state == SESS_OPEN && !m->stopping) {
		if (!waited)
			lc_op_wait_set(LC_WAIT_SESSION, 0);
		waited = true;
		mdsc_cond_wait(m, &m->session_cond, 0, SEC_DO_REQUEST, &t0);
	}
	if (waited)
		lc_op_wait_clear();
	stopping = m->stopping;
	if (s->state != SESS_OPEN || !s->conn || stopping) {
		if (!stopping) {
			pthread_mutex_lock(&m->wait_list_lock);
			if (!(atomic_load(&r->state) & (RS_WAITING | RS_ABORTED))) {
				mdsc_req_get(r);
				cds_list_add_tail(&r->wait_item, &m->wait_list);
				atomic_fetch_or(&r->state, RS_WAITING);
				atomic_fetch_add(&m->nr_waiting, 1);
			}
			pthread_mutex_unlock(&m->wait_list_lock);
			if (!m->want_session) {
				m->want_session = true;
				mdsc_kick_locked(m);
			}
		}
		mdsc_unlock(m, SEC_DO_REQUEST, t0);
		if (stopping)
			mdsc_abort_request(m, r, -ESHUTDOWN, false);
		return;
	}
	c = s->conn;
	mdsc_conn_get(c);
	atomic_store(&r->sent_gen, c->gen);
	mdsc_unlock(m, SEC_DO_REQUEST, t0);

	/* A failed send means the connection is going; the session thread
	 * re-drives every unanswered request once it is back. */
	mdsc_send_request(m, c, r, 0);
	mdsc_conn_put(c);
}

/*
 * mdsc_register_request - give @r a tid and put it in the request map.  The
 * tid is allocated inside the registration section so that registration
 * happens in tid order (what oldest_tid relies on, see the top).  Takes the
 * map's reference.  Return: 0, -ESHUTDOWN, -ENOMEM; -EINVAL if @r was
 * submitted before.
 */
/* m->mutex (mdsc->mutex) held; @r carries the map's reference, dropped on failure. */
static int register_locked(struct mds_client *m, struct mdsc_req *r)
{
	uint64_t tid;
	int ret;

	lockdep_assert_held(&m->mutex);
	if (m->stopping) {
		mdsc_req_put(r);
		return -ESHUTDOWN;
	}
	tid = atomic_fetch_add(&m->last_tid, 1) + 1;
	r->tid = tid;
	r->pub.args.tid = tid;
	ret = xa_insert(&m->requests, tid, r);
	if (!ret)
		atomic_fetch_or(&r->state, RS_REGISTERED);
	/* after the insert (release): every tid up to here is in the map or
	 * will never be (a failed insert); see oldest_tid at the top */
	atomic_store_explicit(&m->registered_tid, tid, memory_order_release);
	if (ret)
		mdsc_req_put(r);
	return ret;
}

int mdsc_register_request(struct mds_client *m, struct mdsc_req *r)
{
	uint64_t t0;
	int ret;

	if (atomic_load(&r->state) != 0)
		return -EINVAL;                 /* submitted twice */
	r->submit_ns = now_mono_ns();
	mdsc_req_get(r);                        /* the map's reference */
	t0 = mdsc_lock(m);
	ret = register_locked(m, r);
	mdsc_unlock(m, SEC_SUBMIT, t0);
	return ret;
}

/*
 * client_mds_locking=before: the shape of the Linux client before its
 * mutex-contention series, kept for tools/bench/run-mdstorm.sh --locking
 * before only.  One client-mutex section registers the request, chooses
 * the session and encodes and queues it (the out_lock nests inside, it is a
 * leaf); a request that must wait for a session takes the normal path.
 */
static int submit_request_before(struct mds_client *m, struct mdsc_req *r)
{
	struct mds_session *s = &m->session;
	uint64_t t0;
	int ret;

	if (atomic_load(&r->state) != 0)
		return -EINVAL;
	r->submit_ns = now_mono_ns();
	mdsc_req_get(r);
	t0 = mdsc_lock(m);
	ret = register_locked(m, r);
	if (ret || s->state != SESS_OPEN || !s->conn || m->wait_kicking) {
		mdsc_unlock(m, SEC_SUBMIT, t0);
		if (!ret)
			do_request(m, r, false);
		return ret;
	}
	atomic_store(&r->sent_gen, s->conn->gen);
	mdsc_send_request(m, s->conn, r, 0);
	mdsc_unlock(m, SEC_SUBMIT, t0);
	return 0;
}

/* submit_request - register @r and drive it. */
static int submit_request(struct mds_client *m, struct mdsc_req *r)
{
	int ret;

	DTRACE_PROBE1(loligo, mdsc_submit_entry, r->pub.args.op);
	if (m->locking_before) {
		ret = submit_request_before(m, r);
	} else {
		ret = mdsc_register_request(m, r);
		if (!ret)
			do_request(m, r, false);
	}
	DTRACE_PROBE2(loligo, mdsc_submit_return, r->tid, ret);
	return ret;
}

/*
 * Wait until @mask is set in r->state, ABORTED, or @deadline_ns (0: none):
 * -ETIMEDOUT.  If the calling thread has an lc_intr (a frontend call its
 * caller may interrupt), a wait that lasts past LC_INTR_ARM_NS arms it, and
 * its firing ends the wait with -EINTR.  Until then (the whole wait, for
 * nearly every request) the waiter sleeps on r->wseq with no lock
 * (wait_fast); past it, on r->cond under r->lock, which lc_intr signals.
 */
/* @deadline_ns (0: none), or the shutdown's bound if that is sooner */
static uint64_t shutdown_clamp(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t by = atomic_load_explicit(&m->shutdown_by, memory_order_acquire);

	return by && (!deadline_ns || by < deadline_ns) ? by : deadline_ns;
}

void mdsc_req_kick(struct mdsc_req *r)
{
	/* seq_cst, paired with wait_fast: either the waiter sees the new
	 * state (or wseq moved under its futex_wait), or we see it asleep */
	atomic_fetch_add(&r->wseq, 1);
	if (atomic_load(&r->wsleepers))
		syscall(SYS_futex, &r->wseq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#ifdef MDSC_TEST_HOOKS
void (*mdsc_test_before_sleep)(struct mdsc_req *r);
#endif

/*
 * wait_fast - the common wait: no interrupt can reach the waiter yet
 * (before LC_INTR_ARM_NS, or no lc_intr at all), so it sleeps on r->wseq
 * with no lock until the state it waits for, ABORTED, @deadline_ns or the
 * shutdown's bound.  Return: 0 (the state is there), -ETIMEDOUT, -EINTR
 * (interrupted before it slept), or 1: time to arm the interrupt, go on
 * under r->lock (wait_state_intr).
 */
static int wait_fast(struct mdsc_req *r, uint32_t mask, uint64_t deadline_ns, struct lc_intr *it,
		     uint64_t arm_ns)
{
	for (;;) {
		uint32_t seq = atomic_load(&r->wseq);
		uint64_t bound, until, now;
		struct timespec ts;

		if (atomic_load(&r->state) & (mask | RS_ABORTED))
			return 0;       /* also a reply that came before we slept */
		if (lc_intr_fired(it))
			return -EINTR;
		bound = shutdown_clamp(r->mdsc, deadline_ns);
		until = bound;
		if (it && (!until || arm_ns < until))
			until = arm_ns;
		if (until) {
			now = now_mono_ns();
			if (now >= until)
				return bound && now >= bound ? -ETIMEDOUT : 1;
			ts = ns_to_timespec(until);
		}
#ifdef MDSC_TEST_HOOKS
		if (mdsc_test_before_sleep)
			mdsc_test_before_sleep(r);
#endif
		atomic_fetch_add(&r->wsleepers, 1);
		/* returns at once if wseq moved since we read it (EAGAIN) */
		syscall(SYS_futex, &r->wseq, FUTEX_WAIT_BITSET_PRIVATE, seq, until ? &ts : NULL, NULL,
			FUTEX_BITSET_MATCH_ANY);
		atomic_fetch_sub(&r->wsleepers, 1);
	}
}

static int wait_state_intr(struct mdsc_req *r, uint32_t mask, uint64_t deadline_ns, struct lc_intr *it)
{
	uint64_t arm_ns = it ? now_mono_ns() + LC_INTR_ARM_NS : 0;
	bool watching = false;
	int ret = 0;

	lockdep_might_wait("a reply from the MDS");
	lc_op_wait_set(r->tid ? LC_WAIT_MDS : LC_WAIT_SESSION, r->tid);
	ret = wait_fast(r, mask, deadline_ns, it, arm_ns);
	if (ret <= 0) {
		lc_op_wait_clear();
		return ret;
	}
	ret = 0;
	/* a long wait: from here on under r->lock, where lc_intr can wake us */
	pthread_mutex_lock(&r->lock);
	while (!(atomic_load(&r->state) & (mask | RS_ABORTED))) {
		/* read under r->lock: mdsc_shutdown_begin broadcasts under it */
		uint64_t bound = shutdown_clamp(r->mdsc, deadline_ns), until = bound;
		int w;

		if (lc_intr_fired(it)) {
			ret = -EINTR;
			break;
		}
		if (it && !watching && (!until || arm_ns < until))
			until = arm_ns;
		if (!until) {
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		struct timespec ts = ns_to_timespec(until);

		w = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		if (w != ETIMEDOUT)
			continue;
		if (bound && now_mono_ns() >= bound) {
			ret = -ETIMEDOUT;
			break;
		}
		if (it && !watching) {
			/* a long wait: let the frontend's interrupt reach us */
			pthread_mutex_unlock(&r->lock);
			lc_intr_watch(it, &r->lock, &r->cond);
			watching = true;
			pthread_mutex_lock(&r->lock);
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (watching)
		lc_intr_unwatch(it);
	lc_op_wait_clear();
	return ret;
}

static int wait_state(struct mdsc_req *r, uint32_t mask, uint64_t deadline_ns)
{
	return wait_state_intr(r, mask, deadline_ns, lc_intr_current());
}

/*
 * Wait for @r's first reply until @deadline (0: none), interruptible by
 * @it (may be NULL); its result.  A timeout gives the request up
 * (-ETIMEDOUT; logged if @tmo, the client_request_timeout that set the
 * deadline, is not 0).  An interrupt gives it up too if @abort_intr (it
 * may still be carried out by the MDS), else -EINTR leaves it in flight
 * for the caller to cancel or wait for again.
 */
static int wait_reply(struct mds_client *m, struct mdsc_req *r, uint64_t deadline, uint64_t tmo,
		      struct lc_intr *it, bool abort_intr)
{
	uint32_t st;
	int ret;

	ret = wait_state_intr(r, RS_GOT_REPLY, deadline, it);
	if (ret == -ETIMEDOUT && atomic_load(&m->shutdown_by) && (!deadline || deadline > now_mono_ns()) &&
	    mdsc_abort_request(m, r, -EIO, true)) {
		/* the client is going away (mdsc_shutdown_begin), the MDS did not answer in time */
		perf_inc(&m->c_timeouts, 1);
		derr(CLIENT, "mds request tid %llu (%s) got no reply before the unmount's deadline "
		     "(client_unmount_timeout): giving up with EIO", (unsigned long long)r->tid,
		     mdsp_op_name(r->pub.args.op));
	} else if (ret == -ETIMEDOUT && mdsc_abort_request(m, r, -ETIMEDOUT, true)) {
		perf_inc(&m->c_timeouts, 1);
		if (tmo)
			derr(CLIENT, "mds request tid %llu (%s) got no reply within %.1f s (client_request_timeout): "
			     "giving up with ETIMEDOUT", (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op),
			     (double)tmo / 1e9);
	} else if (ret == -EINTR && !abort_intr) {
		return -EINTR;
	} else if (ret == -EINTR && mdsc_abort_request(m, r, -EINTR, true)) {
		/* the caller was interrupted (a signal): it may still be carried out */
		perf_inc(&m->c_interrupted, 1);
		dout(CLIENT, 5, "mds request tid %llu (%s) interrupted while waiting for its reply",
		     (unsigned long long)r->tid, mdsp_op_name(r->pub.args.op));
	}
	pthread_mutex_lock(&r->lock);
	st = atomic_load(&r->state);
	ret = (st & RS_GOT_REPLY) ? r->pub.result : r->abort_err;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* An evicted client (not coming back by itself) sends nothing: EIO. */
static int refuse_evicted(struct mds_client *m, struct mdsc_req *r)
{
	if (!atomic_load_explicit(&m->evicted, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&r->lock);
	if (!atomic_load(&r->state)) {
		r->abort_err = -EIO;
		r->pub.result = -EIO;
		atomic_fetch_or(&r->state, RS_ABORTED);
	}
	pthread_mutex_unlock(&r->lock);
	return -EIO;
}

int mdsc_do_request(struct mds_client *m, struct mds_request *pub)
{
	struct mdsc_req *r = to_req(pub);
	uint64_t tmo = mdsc_secs_to_ns(CFG_client_request_timeout), t0 = now_mono_ns();
	int ret;

	DTRACE_PROBE1(loligo, mdsc_do_request_entry, pub->args.op);
	ret = refuse_evicted(m, r);
	if (!ret)
		ret = submit_request(m, r);
	if (ret)
		goto out;
	if (pub->timeout_ns)
		tmo = pub->timeout_ns;
	ret = wait_reply(m, r, tmo ? t0 + tmo : 0, pub->timeout_ns ? 0 : tmo, lc_intr_current(), true);
	hist_add(&m->lat_reply, now_mono_ns() - t0);
out:
	DTRACE_PROBE3(loligo, mdsc_do_request_return, r->tid, ret, now_mono_ns() - t0);
	return ret;
}

int mdsc_submit(struct mds_client *m, struct mds_request *pub)
{
	struct mdsc_req *r = to_req(pub);
	int ret = refuse_evicted(m, r);

	return ret ? ret : submit_request(m, r);
}

void mdsc_uncork(struct mds_client *m)
{
	struct mds_conn *c;
	uint64_t t0;

	if (!atomic_load_explicit(&m->out_frames, memory_order_relaxed))
		return;         /* nothing queued anywhere: no lock */
	t0 = mdsc_lock(m);
	c = m->session.conn;
	if (c)
		mdsc_conn_get(c);
	mdsc_unlock(m, SEC_OTHER, t0);
	if (c) {
		mdsc_conn_uncork(c);
		mdsc_conn_put(c);
	}
}

int mdsc_wait_reply(struct mds_client *m, struct mds_request *pub, uint64_t deadline_ns, bool intr)
{
	return wait_reply(m, to_req(pub), deadline_ns, 0, intr ? lc_intr_current() : NULL, false);
}

void mdsc_set_store_addr(struct mds_client *m, const char *addr)
{
	free(m->store_addr);
	m->store_addr = addr && *addr ? strdup(addr) : NULL;
}

void mdsc_set_slow_ops(struct mds_client *m, uint32_t n, const char *oldest)
{
	char *d = n && oldest ? strdup(oldest) : NULL;
	uint64_t t0 = mdsc_lock(m);

	free(m->slow_op);
	m->slow_op = d;
	m->slow_ops = n;
	m->session.last_renew_sent_ns = 0;   /* a renewal now carries it */
	mdsc_kick_locked(m);
	mdsc_unlock(m, SEC_OTHER, t0);
}

bool mdsc_evicted(struct mds_client *m, char *why, size_t len)
{
	uint64_t t0;

	if (!atomic_load_explicit(&m->evicted, memory_order_acquire))
		return false;
	if (why && len) {
		t0 = mdsc_lock(m);
		snprintf(why, len, "%s", m->session.evict_reason);
		mdsc_unlock(m, SEC_OTHER, t0);
	}
	return true;
}

/*
 * What a wait for SAFE reports once @r is SAFE or given up: 0, -EIO when the
 * SAFE reply undid the UNSAFE one, or the abort error.
 */
static int safe_result(struct mdsc_req *r)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = (atomic_load(&r->state) & RS_GOT_SAFE) ? r->safe_err : r->abort_err;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int mdsc_request_safe_state(struct mds_request *pub)
{
	struct mdsc_req *r = to_req(pub);
	uint32_t st = atomic_load(&r->state);
	int ret;

	if (!(st & (RS_GOT_SAFE | RS_ABORTED)))
		return 0;
	ret = safe_result(r);
	return ret ? ret : 1;
}

int mdsc_wait_safe(struct mds_client *m, struct mds_request *pub)
{
	struct mdsc_req *r = to_req(pub);
	uint64_t tmo = mdsc_secs_to_ns(CFG_client_request_timeout);
	int ret;

	if (!r->tid && !(atomic_load(&r->state) & RS_ABORTED))
		return -EINVAL;                 /* never submitted */
	if (!(atomic_load(&r->state) & (RS_GOT_SAFE | RS_ABORTED)))
		mdsc_flush_hint(m, r->tid);
	ret = wait_state(r, RS_GOT_SAFE, tmo ? now_mono_ns() + tmo : 0);
	if (ret)
		return ret;
	return safe_result(r);
}

/*
 * mdsc_sync_until - wait until every request submitted so far is SAFE or
 * given up, until @deadline_ns (0: no bound).  Return: 0, -ETIMEDOUT, or
 * the first error of a request that will never be SAFE (see
 * mdsc_wait_safe).  No lock held.
 */
int mdsc_sync_until(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t target = atomic_load(&m->last_tid), idx = 0;
	struct mdsc_req *r;
	int ret, first_err = 0;

	for (; (r = mdsc_req_next(m, &idx, target)); idx++) {
		if (!(atomic_load(&r->state) & (RS_GOT_SAFE | RS_ABORTED)))
			mdsc_flush_hint(m, target);     /* one hint for them all */
		ret = wait_state(r, RS_GOT_SAFE, deadline_ns);
		if (!ret)
			ret = safe_result(r);
		mdsc_req_put(r);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			return ret;
		if (ret && !first_err)
			first_err = ret;
	}
	return first_err;
}

int mdsc_sync(struct mds_client *m)
{
	uint64_t tmo = mdsc_secs_to_ns(CFG_client_request_timeout);

	return mdsc_sync_until(m, tmo ? now_mono_ns() + tmo : 0);
}

/* ---- replies --------------------------------------------------------------- */

/* Ops whose reply target is an inode they made (its ino must survive a replay). */
static bool op_creates_inode(uint32_t op)
{
	return op == MDSP_OP_CREATE || op == MDSP_OP_MKNOD || op == MDSP_OP_MKDIR || op == MDSP_OP_SYMLINK ||
	       op == MDSP_OP_TMPFILE;
}

/*
 * Does SAFE reply @rep undo what @r's UNSAFE reply said?  It does if it
 * fails (an UNSAFE reply is only sent for a change that was made), or names
 * another inode than the one the create was answered with.  Caller holds
 * r->lock.
 */
static bool unsafe_undone(const struct mdsc_req *r, const struct mdsp_reply *rep)
{
	uint64_t ino = atomic_load(&r->replay_ino);

	if (r->pub.result)
		return false;           /* the first reply failed already: nothing announced */
	if (rep->result)
		return true;
	return ino && rep->has_target && rep->target.ino != ino;
}

/*
 * mdsc_handle_reply - a REPLY arrived on a connection's reader thread.
 * Finds the request without the client mutex (RCU lookup plus a refcount
 * that fails on a dying request), keeps the first reply (the caller may be
 * reading it; later ones only move the state), and unregisters on SAFE.
 * Takes ownership of @msg.
 */
void mdsc_handle_reply(struct mds_client *m, struct mdsp_msg *msg)
{
	const struct mdsp_reply *rep = &msg->reply;
	uint64_t tid = rep->tid;
	bool safe = !(rep->flags & MDSP_REPLY_UNSAFE), took = false, done = false, undone = false, kick = false;
	struct mdsc_req *r;
	uint64_t t0 = 0;
	uint32_t st;

	DTRACE_PROBE2(loligo, mdsc_handle_reply_entry, tid, rep->flags);
	if (m->locking_before)
		t0 = mdsc_lock(m);      /* the benchmark's "before" shape only */
	else
		hist_add(&m->hold[SEC_HANDLE_REPLY], 0);        /* no client mutex (see the top) */
	rcu_read_lock();
	r = xa_load(&m->requests, tid);
	if (r && !mdsc_req_get_unless_zero(r))
		r = NULL;
	rcu_read_unlock();
	if (!r) {
		dout(CLIENT, 10, "mds reply for tid %llu (flags %#x): no such request (already safe or given up)",
		     (unsigned long long)tid, rep->flags);
		goto out;
	}
	if (rep->flags & MDSP_REPLY_REPLAYED)
		perf_inc(&m->c_replies_replayed, 1);
	perf_inc(safe ? &m->c_replies_safe : &m->c_replies_unsafe, 1);

	/*
	 * SAFE: out of the map first, so that oldest_tid has moved by the time
	 * a waiter wakes up (erasing twice, or a request given up, is a no-op).
	 */
	if (safe)
		mdsc_unregister(m, r);
	pthread_mutex_lock(&r->lock);
	st = atomic_load(&r->state);
	if (!(st & (RS_ABORTED | RS_GOT_SAFE))) {
		if (!(st & RS_GOT_REPLY)) {
			r->reply_msg = msg;
			r->pub.reply = &msg->reply;
			r->pub.result = rep->result;
			/* answered from the MDS's table of completed requests
			 * (resent after a lost connection): run long before,
			 * its place in the order is not known (0) */
			if (!(rep->flags & MDSP_REPLY_REPLAYED))
				r->pub.rx_seq = atomic_fetch_add(&m->rx_seq, 1) + 1;
			took = true;
			/* the connection it came on: the session thread joins a
			 * connection's reader before it resends on the next */
			atomic_store(&r->reply_gen, atomic_load(&r->sent_gen));
			st |= RS_GOT_REPLY;
			if (rep->result && r->pub.on_reply)
				r->safe_err = rep->result;      /* nobody waited: fsync reports it */
			if (!rep->result && rep->has_target && op_creates_inode(r->pub.args.op))
				atomic_store(&r->replay_ino, rep->target.ino);
		} else if (safe && (st & RS_GOT_UNSAFE) && !undone && unsafe_undone(r, rep)) {
			/* the change the UNSAFE reply announced did not survive
			 * (a replay that failed, or got another inode) */
			r->safe_err = -EIO;
			undone = true;
		}
		st |= safe ? RS_GOT_SAFE : RS_GOT_UNSAFE;
		done = safe;
		if (!(took && r->pub.on_reply)) {
			atomic_fetch_or(&r->state, st);
			pthread_cond_broadcast(&r->cond);
			kick = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (kick)
		mdsc_req_kick(r);       /* after the unlock: the waiter needs no lock to go on */
	if (took && r->pub.on_reply) {
		/* nobody waits for the reply itself: its effects first, then a
		 * waiter for SAFE (fsync) wakes up and finds them done.  Never
		 * under the client mutex, in the "before" shape too: the effects
		 * take inode locks, which come before the client mutex (an inode
		 * lock is held while a cap message takes it: lc_caps_update) */
		if (m->locking_before)
			mdsc_unlock(m, SEC_HANDLE_REPLY, t0);
		r->pub.on_reply(&r->pub, r->pub.on_reply_arg);
		if (m->locking_before)
			t0 = mdsc_lock(m);
		pthread_mutex_lock(&r->lock);
		atomic_fetch_or(&r->state, st);
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		mdsc_req_kick(r);
	}
	dout(CLIENT, 15, "mds reply tid %llu result %d %s%s", (unsigned long long)tid, rep->result,
	     safe ? "safe" : "unsafe", (rep->flags & MDSP_REPLY_REPLAYED) ? " (replayed)" : "");
	if (undone) {
		perf_inc(&m->c_unsafe_lost, 1);
		derr(CLIENT, "mds request tid %llu (%s '%s') was answered UNSAFE (ino %llx), but its SAFE reply "
		     "after a replay says %s%s: the change is lost (EIO to fsync)", (unsigned long long)tid,
		     mdsp_op_name(r->pub.args.op), r->pub.args.name ? r->pub.args.name : "",
		     (unsigned long long)atomic_load(&r->replay_ino), rep->result ? strerror(-rep->result) : "ino ",
		     rep->result ? "" : "changed");
	}
	if (done)
		hist_add(&m->lat_safe, now_mono_ns() - r->submit_ns);
	mdsc_req_put(r);
out:
	if (m->locking_before)
		mdsc_unlock(m, SEC_HANDLE_REPLY, t0);
	if (!took) {
		mdsp_msg_free(msg);
		free(msg);
	}
	DTRACE_PROBE2(loligo, mdsc_handle_reply_return, tid, (int)done);
}

/* ---- creation and teardown ------------------------------------------------ */

static uint64_t gauge_inflight(void *arg)
{
	return xa_count(&((struct mds_client *)arg)->requests);
}

static uint64_t gauge_oldest(void *arg)
{
	return mdsc_oldest_tid(arg);
}

static uint64_t gauge_last(void *arg)
{
	return mdsc_last_tid(arg);
}

static uint64_t gauge_waiting(void *arg)
{
	struct mds_client *m = arg;

	return atomic_load_explicit(&m->nr_waiting, memory_order_relaxed);
}

static uint64_t gauge_out_bytes(void *arg)
{
	return atomic_load_explicit(&((struct mds_client *)arg)->out_bytes, memory_order_relaxed);
}

static uint64_t gauge_out_frames(void *arg)
{
	return atomic_load_explicit(&((struct mds_client *)arg)->out_frames, memory_order_relaxed);
}

static uint64_t gauge_send_waiters(void *arg)
{
	return atomic_load_explicit(&((struct mds_client *)arg)->send_waiters, memory_order_relaxed);
}

static void perf_setup(struct mds_client *m)
{
	int i;

	for (i = 0; i < SEC_MAX; i++)
		perf_register_hist(MDSC_PERF_GROUP, section_names[i], &m->hold[i]);
	perf_register_hist(MDSC_PERF_GROUP, "lat_first_reply", &m->lat_reply);
	perf_register_hist(MDSC_PERF_GROUP, "lat_safe", &m->lat_safe);
	perf_register_hist(MDSC_PERF_GROUP, "send_wait", &m->send_wait);
	perf_register_hist(MDSC_PERF_GROUP, "frames_per_write", &m->frames_per_write);
	perf_register_fn(MDSC_PERF_GROUP, "send_queue_bytes", gauge_out_bytes, m);
	perf_register_fn(MDSC_PERF_GROUP, "send_queue_frames", gauge_out_frames, m);
	perf_register_fn(MDSC_PERF_GROUP, "send_waiters", gauge_send_waiters, m);
	perf_register_counter(MDSC_PERF_GROUP, "requests_sent", &m->c_sent);
	perf_register_counter(MDSC_PERF_GROUP, "replies_unsafe", &m->c_replies_unsafe);
	perf_register_counter(MDSC_PERF_GROUP, "replies_safe", &m->c_replies_safe);
	perf_register_counter(MDSC_PERF_GROUP, "flush_hints", &m->c_flush_hints);
	perf_register_counter(MDSC_PERF_GROUP, "replies_replayed", &m->c_replies_replayed);
	perf_register_counter(MDSC_PERF_GROUP, "replays", &m->c_replays);
	perf_register_counter(MDSC_PERF_GROUP, "retries", &m->c_retries);
	perf_register_counter(MDSC_PERF_GROUP, "reconnects", &m->c_reconnects);
	perf_register_counter(MDSC_PERF_GROUP, "sessions_opened", &m->c_opens);
	perf_register_counter(MDSC_PERF_GROUP, "reconnects_rejected", &m->c_rejects);
	perf_register_counter(MDSC_PERF_GROUP, "no_session_answers", &m->c_no_session);
	perf_register_counter(MDSC_PERF_GROUP, "request_timeouts", &m->c_timeouts);
	perf_register_counter(MDSC_PERF_GROUP, "requests_interrupted", &m->c_interrupted);
	perf_register_counter(MDSC_PERF_GROUP, "unsafe_lost", &m->c_unsafe_lost);
	perf_register_counter(MDSC_PERF_GROUP, "sent_lost", &m->c_sent_lost);
	perf_register_counter(MDSC_PERF_GROUP, "direct_sends", &m->c_direct_sends);
	perf_register_counter(MDSC_PERF_GROUP, "corked", &m->c_corked);
	perf_register_counter(MDSC_PERF_GROUP, "cork_wakes", &m->c_cork_wakes);
	perf_register_fn(MDSC_PERF_GROUP, "inflight", gauge_inflight, m);
	perf_register_fn(MDSC_PERF_GROUP, "waiting", gauge_waiting, m);
	perf_register_fn(MDSC_PERF_GROUP, "oldest_tid", gauge_oldest, m);
	perf_register_fn(MDSC_PERF_GROUP, "last_tid", gauge_last, m);
}

int mdsc_set_meta(struct mds_client *m, const char *key, const char *val)
{
	uint32_t i;
	char *k, *v;

	if (!key || !val || strlen(key) > MDSP_META_KEY_MAX || strlen(val) > MDSP_META_VAL_MAX)
		return -EINVAL;
	for (i = 0; i < m->nmeta; i++)
		if (!strcmp(m->meta[i].key, key))
			break;
	if (i == MDSP_META_MAX)
		return -E2BIG;
	v = strdup(val);
	k = i < m->nmeta ? NULL : strdup(key);
	if (!v || (i == m->nmeta && !k)) {
		free(v);
		free(k);
		return -ENOMEM;
	}
	if (i < m->nmeta) {
		free(m->meta[i].val);
		m->meta[i].val = v;
	} else {
		m->meta[i].key = k;
		m->meta[i].val = v;
		m->nmeta++;
	}
	return 0;
}

void mdsc_addrs_free(char **addrs, uint32_t n)
{
	if (!addrs)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(addrs[i]);
	free(addrs);
}

/* Is @a (a trimmed entry) host:port?  NULL, or what is wrong with it. */
static const char *addr_entry_bad(const char *a)
{
	const char *colon = strrchr(a, ':'), *p;
	size_t hl;
	long port = 0;

	if (!colon)
		return "not host:port (no ':port')";
	hl = (size_t)(colon - a);
	if (!hl)
		return "no host before ':'";
	if (hl >= 256)
		return "host name too long";
	if (a[0] == '[' ? a[hl - 1] != ']' || hl < 3 : memchr(a, ':', hl) != NULL)
		return "an IPv6 host must be in brackets: [addr]:port";
	if (!colon[1])
		return "no port after ':'";
	for (p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return "the port is not a number";
		port = port * 10 + (*p - '0');
		if (port > 65535)
			break;
	}
	if (port < 1 || port > 65535)
		return "the port is not in 1-65535";
	return NULL;
}

int mdsc_addrs_parse(const char *list, char ***out, uint32_t *n, char *err, size_t errlen)
{
	char *dup = list ? strdup(list) : NULL, *tok, *e;
	char **v = NULL, **nv;
	uint32_t cnt = 0, i, pos = 0;
	const char *bad;
	int ret = -EINVAL;

	if (err && errlen)
		*err = '\0';
	if (!dup)
		return list ? -ENOMEM : -EINVAL;
	if (!*dup) {
		if (err)
			snprintf(err, errlen, "client_mds_addr is empty: give host:port of the MDS (or a list)");
		goto out;
	}
	/* strsep, not strtok: an empty entry ("a,,b", "a,") is an error, not skipped */
	for (char *rest = dup; (tok = strsep(&rest, ",")); ) {
		pos++;
		while (*tok == ' ' || *tok == '\t')
			tok++;
		for (e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		bad = *tok ? addr_entry_bad(tok) : "empty entry";
		for (i = 0; !bad && i < cnt; i++)
			if (!strcmp(v[i], tok))
				bad = "listed twice";
		if (bad) {
			if (err)
				snprintf(err, errlen, "client_mds_addr '%s': entry %u '%s': %s", list, pos, tok, bad);
			goto out;
		}
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv || !(nv[cnt] = strdup(tok))) {
			v = nv ? nv : v;
			ret = -ENOMEM;
			goto out;
		}
		v = nv;
		cnt++;
	}
	ret = 0;
	if (out) {
		*out = v;
		*n = cnt;
		v = NULL;
	} else if (n) {
		*n = cnt;
	}
out:
	mdsc_addrs_free(v, cnt);
	free(dup);
	return ret;
}

int mdsc_create(const char *addr, const char *client_name, const struct mdsc_ops *ops, void *arg,
		struct mds_client **out)
{
	char *list = NULL, err[512];
	struct mds_client *m;
	char host[128];
	int ret = -ENOMEM;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->mutex, NULL);
	pthread_mutex_init(&m->wait_list_lock, NULL);
	CDS_INIT_LIST_HEAD(&m->wait_list);
	xa_init(&m->requests);
	atomic_init(&m->last_tid, 0);
	atomic_init(&m->oldest_tid, 1);
	if (ops)
		m->ops = *ops;
	m->ops_arg = arg;
	m->reconnect_stale = cfg_bool(CFG_client_reconnect_stale);
	list = addr ? strdup(addr) : cfg_strdup(CFG_client_mds_addr);
	if (client_name) {
		m->name = strdup(client_name);
	} else {
		if (gethostname(host, sizeof(host)))
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = '\0';
		if (asprintf(&m->name, "client.%s.%d", host, (int)getpid()) < 0)
			m->name = NULL;
	}
	if (!list || !m->name)
		goto out_free;
	ret = mdsc_addrs_parse(list, &m->addrs, &m->naddrs, err, sizeof(err));
	if (ret) {
		if (ret == -EINVAL)
			derr(CLIENT, "%s", err);
		goto out_free;
	}
	atomic_init(&m->addr, m->addrs[0]);
	free(list);
	list = NULL;
	{
		char mode[32];

		cfg_get_string(CFG_client_mds_locking, mode, sizeof(mode));
		if (!strcmp(mode, "before")) {
			m->locking_before = true;
			dinfo(CLIENT, "client_mds_locking=before: the client mutex is held across encoding, "
			      "sending and reply handling (benchmark comparison only)");
		} else if (strcmp(mode, "series")) {
			derr(CLIENT, "client_mds_locking '%s' is neither 'series' nor 'before'", mode);
			ret = -EINVAL;
			goto out_free;
		}
	}
	ret = mdsc_auth_init(m);
	if (ret)
		goto out_free;
	mdsc_session_init(m);
	ret = mdsc_session_thread_start(m);
	if (ret)
		goto out_session;
	perf_setup(m);
	*out = m;
	return 0;

out_session:
	mdsc_session_fini(m);
out_free:
	xa_destroy(&m->requests);
	pthread_mutex_destroy(&m->wait_list_lock);
	pthread_mutex_destroy(&m->mutex);
	free(list);
	mdsc_addrs_free(m->addrs, m->naddrs);
	free(m->name);
	free(m->auth_name);
	free(m->keyring_path);
	memset(m->key, 0, sizeof(m->key));
	free(m);
	return ret;
}

const char *mdsc_addr(struct mds_client *m)
{
	return atomic_load_explicit(&m->addr, memory_order_acquire);
}

/* Give up on every request still in the map (teardown). */
static void abort_all(struct mds_client *m, int err)
{
	struct mdsc_req *r;
	uint64_t idx = 0;

	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		mdsc_abort_request(m, r, err, false);
		mdsc_req_put(r);
	}
}

void mdsc_shutdown_begin(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t cur = atomic_load(&m->shutdown_by), idx = 0;
	struct mdsc_req *r;

	if (!deadline_ns)
		deadline_ns = 1;
	while ((!cur || deadline_ns < cur) &&
	       !atomic_compare_exchange_weak(&m->shutdown_by, &cur, deadline_ns))
		;
	/* wake every waiter so that it takes the bound (a wait with no
	 * deadline sleeps on its condition variable for good otherwise) */
	for (; (r = mdsc_req_next(m, &idx, UINT64_MAX)); idx++) {
		pthread_mutex_lock(&r->lock);
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		mdsc_req_kick(r);
		mdsc_req_put(r);
	}
}

void mdsc_destroy(struct mds_client *m)
{
	mdsc_destroy_by(m, now_mono_ns() + mdsc_secs_to_ns(CFG_client_unmount_timeout));
}

void mdsc_destroy_by(struct mds_client *m, uint64_t deadline_ns)
{
	uint64_t n;

	if (!m)
		return;
	mdsc_session_close(m, deadline_ns);     /* waits for SAFE (bounded), closes, stops threads */
	n = xa_count(&m->requests);
	if (n)
		derr(CLIENT, "mds session closed with %llu request(s) not safe: giving up on them",
		     (unsigned long long)n);
	abort_all(m, -ESHUTDOWN);
	perf_unregister_group(MDSC_PERF_GROUP);
	rcu_barrier();                  /* every req_free_rcu has run */
	xa_destroy(&m->requests);
	mdsc_session_fini(m);
	pthread_mutex_destroy(&m->wait_list_lock);
	pthread_mutex_destroy(&m->mutex);
	mdsc_addrs_free(m->addrs, m->naddrs);       /* nothing reads m->addr any more */
	for (uint32_t i = 0; i < m->nmeta; i++) {
		free(m->meta[i].key);
		free(m->meta[i].val);
	}
	free(m->name);
	free(m->store_addr);
	free(m->slow_op);
	free(m);
}

uint64_t mdsc_request_reply_gen(const struct mds_request *pub)
{
	const struct mdsc_req *r = caa_container_of(pub, const struct mdsc_req, pub);

	return atomic_load(&r->reply_gen);
}

uint64_t mdsc_oldest_tid(struct mds_client *m)
{
	return atomic_load_explicit(&m->oldest_tid, memory_order_acquire);
}

uint64_t mdsc_last_tid(struct mds_client *m)
{
	return atomic_load_explicit(&m->last_tid, memory_order_acquire);
}

/* ---- wait list ------------------------------------------------------------- */

/*
 * mdsc_kick_wait_list - the session opened: drive every parked request.
 * The list is spliced out under wait_list_lock alone; do_request then takes
 * the client mutex per request, as a fresh submission would.  Requests
 * submitted meanwhile wait for the session thread to end the kick
 * (wait_kicking); one that finds the session gone again goes back on the
 * list for the next open.
 */
void mdsc_kick_wait_list(struct mds_client *m)
{
	struct cds_list_head local, *pos, *tmp;
	struct mdsc_req *r;
	unsigned int n = 0;

	CDS_INIT_LIST_HEAD(&local);
	pthread_mutex_lock(&m->wait_list_lock);
	cds_list_splice(&m->wait_list, &local);
	CDS_INIT_LIST_HEAD(&m->wait_list);
	cds_list_for_each(pos, &local) {
		r = cds_list_entry(pos, struct mdsc_req, wait_item);
		atomic_fetch_and(&r->state, ~RS_WAITING);
		atomic_fetch_sub(&m->nr_waiting, 1);
	}
	pthread_mutex_unlock(&m->wait_list_lock);

	cds_list_for_each_safe(pos, tmp, &local) {
		r = cds_list_entry(pos, struct mdsc_req, wait_item);
		cds_list_del_init(&r->wait_item);
		do_request(m, r, true);
		mdsc_req_put(r);                /* the wait list's reference */
		n++;
	}
	if (n)
		dout(CLIENT, 5, "mds session open: sent %u waiting request(s)", n);
}

/* ---- admin socket -------------------------------------------------------------- */

static int asok_requests(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds_client *m = priv;
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array(), *e;
	uint64_t now = now_mono_ns(), idx;
	struct mdsc_req *r;
	uint32_t st;

	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return -ENOMEM;
	}
	rcu_read_lock();
	xa_for_each(&m->requests, idx, r) {
		st = atomic_load(&r->state);
		e = json_object_new_object();
		if (!e)
			break;
		json_object_object_add(e, "tid", json_object_new_uint64(r->tid));
		json_object_object_add(e, "op", json_object_new_string(mdsp_op_name(r->pub.args.op)));
		json_object_object_add(e, "ino", json_object_new_uint64(r->pub.args.ino));
		if (r->pub.args.name)
			json_object_object_add(e, "name", json_object_new_string(r->pub.args.name));
		json_object_object_add(e, "attempt", json_object_new_int64(atomic_load(&r->attempts)));
		json_object_object_add(e, "age_ms", json_object_new_double((double)mono_since(now, r->submit_ns) / 1e6));
		json_object_object_add(e, "waiting_for_session", json_object_new_boolean(st & RS_WAITING));
		json_object_object_add(e, "got_unsafe", json_object_new_boolean(st & RS_GOT_UNSAFE));
		json_object_object_add(e, "got_reply", json_object_new_boolean(st & RS_GOT_REPLY));
		json_object_object_add(e, "conn_gen", json_object_new_uint64(atomic_load(&r->sent_gen)));
		json_object_array_add(arr, e);
	}
	rcu_read_unlock();
	json_object_object_add(o, "oldest_tid", json_object_new_uint64(mdsc_oldest_tid(m)));
	json_object_object_add(o, "last_tid", json_object_new_uint64(mdsc_last_tid(m)));
	json_object_object_add(o, "requests", arr);
	*out = o;
	return 0;
}

static int asok_sessions(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds_client *m = priv;
	struct json_object *arr = json_object_new_array();

	if (!arr)
		return -ENOMEM;
	json_object_array_add(arr, mdsc_session_json(m));
	*out = arr;
	return 0;
}

static const struct asok_cmd mdsc_cmds[] = {
	{ "mds_requests", "", "metadata requests in flight (tid, op, attempt, age, unsafe)", asok_requests },
	{ "mds_sessions", "", "the MDS session: state, id, address, renew sequence and age", asok_sessions },
};

int mdsc_register_asok(struct mds_client *m, struct asok *a)
{
	return asok_register(a, mdsc_cmds, (int)(sizeof(mdsc_cmds) / sizeof(mdsc_cmds[0])), m);
}
