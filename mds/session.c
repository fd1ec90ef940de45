/*
 * session.c - client sessions, the reconnect phase and the
 * completed-request tables.  The requests that run in a session go through
 * request.c (the pipeline above this layer); the leases a session holds
 * are locker.c's.
 *
 * A session is opened (journaled before the OPEN reply, so it survives a
 * restart), renewed by the client every lease interval, marked STALE when
 * the renewals stop for mds_session_timeout and closed (evicted) after
 * mds_session_autoclose.  A client whose connection broke, or whose MDS
 * restarted, sends RECONNECT with its session id and gets the same session
 * back on the new connection; replies still in flight follow it there.
 *
 * Exactly-once: every journaled request's reply is stored, keyed by tid, in
 * the session's completed table, and the store edit that records it rides in
 * the same journal entry as the mutation itself.  A request whose tid is in
 * the table is answered from it (MDSP_REPLY_REPLAYED) and never run again,
 * before or after a restart.  Entries below the client's oldest_tid are
 * trimmed (in memory at once, in the store with the next journaled request).
 *
 * Stored per session: "mds_sessions" omap id -> record, and
 * "mds_completed.<id>" omap tid -> encoded SAFE reply frame.
 *
 * Nobody takes over a session: it gets a secret at OPEN (journaled in its
 * record; on an authenticated connection both sides derive it from the
 * handshake, otherwise it rides in the OPEN reply), and RECONNECT must carry
 * mdsp_reconnect_proof() over this connection's nonces.  A RECONNECT that
 * cannot prove it is refused and leaves the session, and the connection it
 * is bound to, alone.  A session opened by an authenticated name can only
 * be resumed by that name.  mds_max_sessions and mds_max_sessions_per_peer
 * bound what opens can make the MDS keep.
 *
 * The reconnect phase after a restart waits only for the sessions that may
 * hold state the MDS must not let others overtake: those that were
 * connected when it stopped (see session_has_state_locked()).  A session's
 * record is journaled again when its connection closes (flag
 * SESSION_F_DISCONNECTED) and when it comes back; since journal entries are
 * durable in order, a durable "disconnected" means every change the session
 * made before is durable too, so it has no UNSAFE reply the crash could
 * have taken back.  A connection the MDS closes because it stops does not
 * mark its session: the client reconnects to the next MDS with what it
 * still has to send (asynchronous creates queued, caps, locks), and the
 * next MDS waits for it as after a crash.  A session that did not come back within one reconnect
 * phase is marked (SESSION_F_MISSED_RECONNECT) and not waited for again.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/blocklist.h"
#include "mds/flock.h"
#include "mds/journal.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/net.h"
#include "mds/prealloc.h"
#include "mds/session.h"

#define V_SESSION_REC 5   /* 2: the ino pool (prealloc.c); 3: secret, flags, auth name, peer address;
			   * 4: the data-store address (blocklist.c fences it); 5: which of the
			   * pool's ranges are delegated */

void session_key_tid(char *buf, size_t len, uint64_t tid)
{
	snprintf(buf, len, "%016" PRIx64, tid);
}

static uint32_t lease_ms(void)
{
	return (uint32_t)(cfg_double(CFG_mds_session_timeout) * 1000.0);
}

static int session_frame(struct mds *m, struct mdsp_buf *b, uint32_t op, uint64_t sid, uint64_t seq,
			 int32_t result, const char *reason)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = op;
	msg.session.session_id = sid;
	msg.session.seq = seq;
	msg.session.lease_ms = lease_ms();
	msg.session.mds_epoch = m->epoch;
	if (op == MDSP_SESSION_OPEN || op == MDSP_SESSION_CONFIG)
		msg.session.max_file_size = m->max_file_size;
	msg.session.result = result;
	msg.session.reason = (char *)reason;
	mdsp_buf_init(b);
	return mdsp_encode(b, &msg);
}

/* An OPEN frame carrying @secret (NULL: none, the peer derives it). */
static int session_frame_secret(struct mds *m, struct mdsp_buf *b, uint32_t op, uint64_t sid, uint64_t seq,
				const uint8_t *secret)
{
	struct mdsp_msg msg;
	int r;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = op;
	msg.session.session_id = sid;
	msg.session.seq = seq;
	msg.session.lease_ms = lease_ms();
	msg.session.mds_epoch = m->epoch;
	if (secret)
		memcpy(msg.session.secret, secret, MDSP_KEY_LEN);
	mdsp_buf_init(b);
	r = mdsp_encode(b, &msg);
	memset(msg.session.secret, 0, MDSP_KEY_LEN);
	return r;
}

static bool secret_is_zero(const uint8_t *p)
{
	uint8_t acc = 0;
	int i;

	for (i = 0; i < MDSP_KEY_LEN; i++)
		acc |= p[i];
	return acc == 0;
}

static void send_session(struct mds *m, struct conn *c, uint32_t op, uint64_t sid, uint64_t seq, int32_t result,
			 const char *reason)
{
	struct mdsp_buf b;

	if (!session_frame(m, &b, op, sid, seq, result, reason))
		conn_send_frame(c, &b);
	mdsp_buf_free(&b);
}

/* send_session with the file locks of a RECONNECT's OPEN (the refused ones) */
static void send_session_locks(struct mds *m, struct conn *c, uint32_t op, uint64_t sid, uint64_t seq,
			       struct mdsp_lock *locks, uint32_t nlocks)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = op;
	msg.session.session_id = sid;
	msg.session.seq = seq;
	msg.session.lease_ms = lease_ms();
	msg.session.mds_epoch = m->epoch;
	msg.session.max_file_size = m->max_file_size;
	msg.session.locks = locks;
	msg.session.nlocks = nlocks;
	mdsp_buf_init(&b);
	if (!mdsp_encode(&b, &msg))
		conn_send_frame(c, &b);
	mdsp_buf_free(&b);
}

struct jitem *session_item_new(struct conn *c, uint64_t sid)
{
	struct jitem *it = calloc(1, sizeof(*it));

	if (!it)
		return NULL;
	mdsp_buf_init(&it->frame);
	if (c) {
		conn_get(c);
		it->conn = c;
	}
	it->sid = sid;
	it->start_ns = now_mono_ns();
	return it;
}

static void completed_free(struct completed *ce)
{
	free(ce->frame);
	free(ce);
}

/* Caller holds mds->lock. */
void session_completed_trim_locked(struct session *s, uint64_t below)
{
	uint64_t idx = 0;
	struct completed *ce;

	rcu_read_lock();
	while ((ce = xa_find(&s->completed, &idx)) && idx < below) {
		xa_erase(&s->completed, idx);
		completed_free(ce);
		s->ncompleted--;
		idx++;
	}
	rcu_read_unlock();
}

struct session *session_new_locked(struct mds *m, uint64_t id)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->id = id;
	s->state = SESSION_STALE;
	s->last_renew_ns = now_mono_ns();
	CDS_INIT_LIST_HEAD(&s->caps);
	CDS_INIT_LIST_HEAD(&s->leases);
	xa_init(&s->cap_index);
	xa_init(&s->lease_index);
	xa_init(&s->completed);
	if (xa_store(&m->sessions, id, s)) {
		xa_destroy(&s->completed);
		xa_destroy(&s->cap_index);
		xa_destroy(&s->lease_index);
		free(s);
		return NULL;
	}
	m->nsessions++;
	return s;
}


/* Journal @s's record as it is now (flags changed).  Caller holds mds->lock. */
static void session_rec_journal_locked(struct mds *m, struct session *s)
{
	struct txn t;

	lockdep_assert_held(&m->lock);
	txn_init(&t);
	session_rec_edit_locked(s, &t);
	journal_submit_locked(m, &t, NULL);
	txn_free(&t);
}

/*
 * Whether a restored session must be waited for in the reconnect phase: it
 * may hold requests whose UNSAFE replies the crash took back, and letting
 * another client's mutation in first could conflict with their replay.  Only
 * a session that was connected when the MDS stopped can (see the top of the
 * file); one that missed a reconnect phase already had its chance.  Caps and
 * open files are not journaled yet; when they are, a disconnected session
 * that holds them belongs here too.  Caller holds mds->lock.
 */
static bool session_has_state_locked(struct mds *m, const struct session *s)
{
	lockdep_assert_held(&m->lock);
	if (s->flags & SESSION_F_MISSED_RECONNECT)
		return false;
	/* file locks are re-asserted in RECONNECT (flock.c): until it did,
	 * no lock may be granted to anyone */
	return !(s->flags & SESSION_F_DISCONNECTED) || (s->flags & SESSION_F_HELD_LOCKS);
}

/* Caller holds mds->lock.  @mark: the phase ran its course (every session
 * that held state replayed, or the timeout): the ones still pending missed
 * it.  Not at shutdown: they may still have to replay after the next start. */
static void reconnect_phase_end_marking_locked(struct mds *m, const char *why, bool mark)
{
	uint64_t idx, nmissed = 0;
	struct session *s;

	lockdep_assert_held(&m->lock);
	if (!m->reconnecting)
		return;
	m->reconnecting = false;
	/* the ones that did not come back are not waited for again */
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (!s->replay_pending)
			continue;
		s->replay_pending = false;
		if (mark && !(s->flags & SESSION_F_MISSED_RECONNECT)) {
			s->flags |= SESSION_F_MISSED_RECONNECT;
			session_rec_journal_locked(m, s);
		}
		nmissed++;
	}
	rcu_read_unlock();
	m->nreplay_pending = 0;
	dinfo(MDS, "reconnect phase over (%s); %" PRIu64 " restored sessions did not replay", why, nmissed);
	m->strays_unchecked = true;   /* orphans nobody re-asserted go now (locker_tick) */
	pthread_cond_broadcast(&m->reconnect_cond);
	locker_wake_all(m);           /* the requests the phase held back */
	if (mark)
		flock_reconnect_over_locked(m);   /* the lock requests it held back */
}

/* Caller holds mds->lock. */
static void reconnect_phase_end_locked(struct mds *m, const char *why)
{
	lockdep_assert_held(&m->lock);
	reconnect_phase_end_marking_locked(m, why, true);
}

/* @s came back (RECONNECT or a renew): clear its marks.  Caller holds mds->lock. */
static void session_back_locked(struct mds *m, struct session *s)
{
	lockdep_assert_held(&m->lock);
	if (!(s->flags & (SESSION_F_MISSED_RECONNECT | SESSION_F_DISCONNECTED | SESSION_F_HELD_LOCKS)))
		return;
	s->flags &= ~(SESSION_F_MISSED_RECONNECT | SESSION_F_DISCONNECTED | SESSION_F_HELD_LOCKS);
	session_rec_journal_locked(m, s);
}

/* @s has finished replaying (or is gone).  Caller holds mds->lock. */
static void replay_done_locked(struct mds *m, struct session *s)
{
	lockdep_assert_held(&m->lock);
	if (!s->replay_pending)
		return;
	s->replay_pending = false;
	if (m->nreplay_pending)
		m->nreplay_pending--;
	if (!m->nreplay_pending)
		reconnect_phase_end_locked(m, "every restored session replayed");
}

void session_reconnect_phase_cancel(struct mds *m)
{
	pthread_mutex_lock(&m->lock);
	reconnect_phase_end_marking_locked(m, "shutting down", false);
	pthread_mutex_unlock(&m->lock);
}

void session_reconnect_phase_start(struct mds *m)
{
	double secs = cfg_double(CFG_mds_reconnect_timeout);
	uint64_t idx, nstateless = 0;
	struct session *s;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (!session_has_state_locked(m, s)) {
			nstateless++;
			continue;
		}
		s->replay_pending = true;
		m->nreplay_pending++;
	}
	rcu_read_unlock();
	if (m->nreplay_pending && secs > 0) {
		/* lock requests wait until these have re-asserted their locks */
		rcu_read_lock();
		xa_for_each(&m->sessions, idx, s)
			if (s->replay_pending)
				flock_reconnect_phase_start_locked(m, s);
		rcu_read_unlock();
	}
	if (m->nreplay_pending && secs > 0) {
		m->reconnecting = true;
		m->reconnect_until_ns = now_mono_ns() + (uint64_t)(secs * 1e9);
		dinfo(MDS, "reconnect phase: waiting up to %.1f s for %" PRIu64 " sessions that held state to "
			   "reconnect and replay (%" PRIu64 " without state not waited for)",
		      secs, m->nreplay_pending, nstateless);
	} else {
		rcu_read_lock();
		xa_for_each(&m->sessions, idx, s)
			s->replay_pending = false;
		rcu_read_unlock();
		m->nreplay_pending = 0;
		if (m->nsessions)
			dinfo(MDS, "reconnect phase over at once: none of the %" PRIu64 " restored sessions held state",
			      m->nsessions);
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * Hold a mutation back while restored sessions may still replay theirs, so
 * that a change a client saw applied (UNSAFE) before the crash is redone
 * before anyone else's new request can conflict with it.  A request without
 * MDSP_REQ_REPLAY from a restored session ends that session's replay
 * (@first: the request's first run).  Returns true when @req must wait for
 * the end of the phase: the caller parks it (locker.c) rather than waiting
 * here, because the reader thread must go on reading: another client's
 * replay may revoke caps this client has to ack.  Caller holds mds->lock.
 */
/*
 * A request of @s that is not a REPLAY came (@first: for the first time):
 * its replay is over, unless a replay of it still waits in its ordered
 * list (park.c); ended now, the phase would let other sessions' changes
 * run before that one.  Then it ends with the next of its requests that
 * passes here once none does.  Caller holds mds->lock.
 */
static void replay_over_locked(struct mds *m, struct session *s, bool first)
{
	if (first)
		s->replay_deferred = true;
	if (s->replay_deferred && !locker_order_holds_replay(s)) {
		s->replay_deferred = false;
		replay_done_locked(m, s);
	}
}

void session_replay_left_locked(struct mds *m, struct session *s)
{
	lockdep_assert_held(&m->lock);
	if (s->replay_deferred)
		replay_over_locked(m, s, false);
}

bool session_reconnect_gate_locked(struct mds *m, struct session *s, const struct mdsp_request *req,
				   bool journaled, bool first)
{
	if (m->reconnecting && now_mono_ns() >= m->reconnect_until_ns)
		reconnect_phase_end_locked(m, "timeout");
	if (!m->reconnecting || (req->flags & MDSP_REQ_REPLAY))
		return false;
	replay_over_locked(m, s, first);
	return journaled && m->reconnecting;
}

/* Keep the metadata of @msg (taken from it: its arrays become ours), or drop ours (@msg NULL). */
static void session_take_meta(struct session *s, struct mdsp_session *msg)
{
	uint32_t i;

	if (msg && !msg->nmeta)
		return;	/* an older client, or nothing said: keep what we had */
	for (i = 0; i < s->nmeta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].val);
	}
	free(s->meta);
	s->meta = NULL;
	s->nmeta = 0;
	if (msg) {
		s->meta = msg->meta;
		s->nmeta = msg->nmeta;
		msg->meta = NULL;
		msg->nmeta = 0;
	}
}

bool session_reconnect_hold_locked(struct mds *m, struct session *s, const struct mdsp_request *req)
{
	if (m->reconnecting && now_mono_ns() >= m->reconnect_until_ns)
		reconnect_phase_end_locked(m, "timeout");
	if (!m->reconnecting)
		return false;
	if (!(req->flags & MDSP_REQ_REPLAY))
		replay_over_locked(m, s, true);
	/* locks are re-asserted in RECONNECT: once every session that may
	 * hold some did, lock requests need not wait for the replays */
	return m->reconnecting && flock_reassert_pending_locked(m);
}

/* Caller holds mds->lock. */
static void session_free_locked(struct mds *m, struct session *s)
{
	struct conn *c = s->conn;

	lockdep_assert_held(&m->lock);
	replay_done_locked(m, s);
	locker_session_drop(m, s);
	locker_order_session_gone(m, s);
	flock_session_drop_locked(m, s);

	if (xa_load(&m->sessions, s->id) == s) {
		xa_erase(&m->sessions, s->id);
		m->nsessions--;
	}
	session_completed_trim_locked(s, UINT64_MAX);
	{
		/* tid UINT64_MAX itself */
		struct completed *ce = xa_erase(&s->completed, UINT64_MAX);

		if (ce)
			completed_free(ce);
	}
	xa_destroy(&s->completed);
	free(s->authcaps);
	s->authcaps = NULL;
	xa_destroy(&s->cap_index);     /* emptied by locker_session_drop */
	xa_destroy(&s->lease_index);
	if (c) {
		if (c->session_id == s->id)
			c->session_id = 0;
		conn_put(c);
	}
	free(s->client_name);
	session_take_meta(s, NULL);
	free(s->store_addr);
	free(s->slow_op);
	memset(s->secret, 0, sizeof(s->secret));
	free(s);
}

void session_free_all(struct mds *m)
{
	uint64_t idx;
	struct session *s;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s)
		session_free_locked(m, s);
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
}

static void session_rec_encode(struct mdsp_buf *b, const struct session *s)
{
	size_t off = enc_begin(b, V_SESSION_REC, 1);

	enc_u64(b, s->id);
	enc_str(b, s->client_name);
	enc_bytes(b, s->uuid, 16);
	prealloc_encode(b, s);                  /* v2 */
	/* v3 */
	enc_bytes(b, s->secret, MDSP_KEY_LEN);
	enc_u32(b, s->flags);
	enc_str(b, s->auth_name);
	enc_str(b, s->peer_addr);
	enc_str(b, s->store_addr ? s->store_addr : "");   /* v4 */
	enc_u32(b, prealloc_deleg_mask(s));                /* v5 */
	enc_end(b, off);
}

void session_rec_edit_locked(struct session *s, struct txn *t)
{
	struct mdsp_buf rec;
	char key[32];

	mdsp_buf_init(&rec);
	session_rec_encode(&rec, s);
	session_key_tid(key, sizeof(key), s->id);
	txn_edit(t, EDIT_SET, OID_SESSIONS, key, rec.data, rec.len, NULL);
	mdsp_buf_free(&rec);
}

static int session_rec_apply(struct mds *m, const void *p, size_t len)
{
	struct dec c, d;
	uint64_t id;
	char *name, *auth_name = NULL, *peer = NULL, *store_addr = NULL;
	const void *uuid, *secret = NULL;
	uint32_t flags = 0;
	struct session *s, pool = { .nprealloc = 0 };
	uint8_t ver;

	dec_init(&c, p, len);
	ver = dec_enter(&c, V_SESSION_REC, &d);
	if (!ver)
		return -EBADMSG;
	id = dec_u64(&d);
	name = dec_str(&d, MDSP_CLIENT_NAME_MAX);
	uuid = dec_bytes(&d, 16);
	if (ver >= 2 && prealloc_decode(&d, &pool))
		d.bad = true;
	if (ver >= 3) {
		secret = dec_bytes(&d, MDSP_KEY_LEN);
		flags = dec_u32(&d);
		auth_name = dec_str(&d, MDSP_AUTH_NAME_MAX);
		peer = dec_str(&d, 47);
	}
	if (ver >= 4)
		store_addr = dec_str(&d, MDSP_STORE_ADDR_MAX);
	if (ver >= 5)
		prealloc_deleg_restore(&pool, dec_u32(&d));
	if (d.bad || !id) {
		free(name);
		free(auth_name);
		free(peer);
		free(store_addr);
		return -EBADMSG;
	}
	s = xa_load(&m->sessions, id);
	if (!s)
		s = session_new_locked(m, id);
	if (!s) {
		free(name);
		free(auth_name);
		free(peer);
		free(store_addr);
		return -ENOMEM;
	}
	free(s->client_name);
	s->client_name = name;
	memcpy(s->uuid, uuid, 16);
	memcpy(s->prealloc, pool.prealloc, sizeof(s->prealloc));
	s->nprealloc = pool.nprealloc;
	if (secret)
		memcpy(s->secret, secret, MDSP_KEY_LEN);
	s->flags = flags;
	snprintf(s->auth_name, sizeof(s->auth_name), "%s", auth_name ? auth_name : "");
	snprintf(s->peer_addr, sizeof(s->peer_addr), "%s", peer ? peer : "");
	free(auth_name);
	free(peer);
	free(s->store_addr);
	s->store_addr = store_addr && *store_addr ? store_addr : NULL;
	if (!s->store_addr)
		free(store_addr);
	if (id >= m->next_sid)
		m->next_sid = id + 1;
	return 0;
}

int session_completed_add(struct session *s, uint64_t tid, const void *frame, size_t len, uint64_t jseq)
{
	struct completed *ce = calloc(1, sizeof(*ce)), *old;

	if (!ce)
		return -ENOMEM;
	ce->frame = malloc(len ? len : 1);
	if (!ce->frame) {
		free(ce);
		return -ENOMEM;
	}
	memcpy(ce->frame, frame, len);
	ce->len = len;
	ce->tid = tid;
	ce->jseq = jseq;
	old = xa_load(&s->completed, tid);
	if (xa_store(&s->completed, tid, ce)) {
		completed_free(ce);
		return -ENOMEM;
	}
	if (old)
		completed_free(old);
	else
		s->ncompleted++;
	return 0;
}

int session_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2)
{
	struct session *s;
	uint64_t id;

	if (!strcmp(oid, OID_SESSIONS)) {
		if (op == EDIT_SET)
			return session_rec_apply(m, val, len);
		if (op == EDIT_RM) {
			s = xa_load(&m->sessions, strtoull(key, NULL, 16));
			if (s)
				session_free_locked(m, s);
		}
		return 0;
	}
	id = strtoull(oid + strlen("mds_completed."), NULL, 16);
	s = xa_load(&m->sessions, id);
	if (!s)
		return 0;
	switch (op) {
	case EDIT_SET:
		return session_completed_add(s, strtoull(key, NULL, 16), val, len, 0);
	case EDIT_RMRANGE:
		session_completed_trim_locked(s, strtoull(key2, NULL, 16));
		return 0;
	case EDIT_CLEAR:
	case EDIT_REMOVE:
		session_completed_trim_locked(s, UINT64_MAX);
		return 0;
	}
	return 0;
}

int session_load(struct mds *m)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	char oid[64];
	uint64_t idx;
	struct session *s;
	int r = 0;

	store_omap_iter_init(&it, m->meta, OID_SESSIONS, NULL, 256);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL) {
		r = session_rec_apply(m, kv->val, kv->len);
		if (r == -EBADMSG) {
			derr(MDS, "session table: damaged record %s skipped", kv->key);
			r = 0;
		}
	}
	if (store_omap_iter_end(&it))
		r = it.err;
	if (r)
		return r;
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		oid_completed(oid, sizeof(oid), s->id);
		store_omap_iter_init(&it, m->meta, oid, NULL, 1024);
		while (!r && (kv = store_omap_iter_next(&it)) != NULL)
			r = session_completed_add(s, strtoull(kv->key, NULL, 16), kv->val, kv->len, 0);
		if (store_omap_iter_end(&it))
			r = it.err;
		if (r)
			break;
	}
	rcu_read_unlock();
	return r;
}

/* Close @s: journal its removal; @item (may be NULL) is sent once durable.
 * Caller holds mds->lock. */
static void session_close_locked(struct mds *m, struct session *s, struct jitem *item)
{
	struct txn t;
	char key[32], oid[64];

	lockdep_assert_held(&m->lock);
	txn_init(&t);
	session_key_tid(key, sizeof(key), s->id);
	txn_edit(&t, EDIT_RM, OID_SESSIONS, key, NULL, 0, NULL);
	oid_completed(oid, sizeof(oid), s->id);
	txn_edit(&t, EDIT_REMOVE, oid, NULL, NULL, 0, NULL);
	session_free_locked(m, s);
	journal_submit_locked(m, &t, item);
	txn_free(&t);
}

/* Whether one more session may open for @c; a reason for the REJECT if not.
 * Caller holds mds->lock. */
static int session_limits_locked(struct mds *m, struct conn *c, char *reason, size_t len)
{
	uint64_t max = cfg_uint(CFG_mds_max_sessions), per_peer = cfg_uint(CFG_mds_max_sessions_per_peer);
	uint64_t idx, same = 0;
	struct session *s;

	lockdep_assert_held(&m->lock);
	if (max && m->nsessions >= max) {
		snprintf(reason, len, "the mds keeps mds_max_sessions (%" PRIu64 ") sessions: close unused ones, "
				      "evict stale ones (client evict) or raise the limit", max);
		return -EUSERS;
	}
	if (!per_peer)
		return 0;
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s)
		same += !strcmp(s->peer_addr, c->peer_addr);
	rcu_read_unlock();
	if (same >= per_peer) {
		snprintf(reason, len, "%s has mds_max_sessions_per_peer (%" PRIu64 ") sessions: close unused ones, "
				      "evict stale ones (client evict) or raise the limit", c->peer_addr, per_peer);
		return -EUSERS;
	}
	return 0;
}

/* Caller holds mds->lock. */
static void bind_conn_locked(struct mds *m, struct session *s, struct conn *c)
{
	lockdep_assert_held(&m->lock);
	if (s->conn == c)
		return;
	if (s->conn) {
		if (s->conn->session_id == s->id)
			s->conn->session_id = 0;
		conn_put(s->conn);
	}
	conn_get(c);
	s->conn = c;
	c->session_id = s->id;
}

static int session_evict_how(struct mds *m, uint64_t id, const char *why, bool blocklist);

/*
 * A REQUEST_OPEN that names a session to reclaim: the session of this
 * client's predecessor, a process of the same name on the same host and
 * mount point that is gone (the client proves that with a lock file the
 * kernel released at its death: client/reclaim.c).  It is evicted exactly
 * as `client evict` does it (blocklisted and fenced in the data store
 * first, then its caps, leases, file locks and parked requests dropped,
 * journaled) before the new session opens, so nobody waits
 * mds_session_timeout for a client that is known to be dead.
 *
 * The uuid must match too (a session id alone is a small number anyone can
 * guess), and the session must belong to the name this connection
 * authenticated as ("" for both without authentication): else -EPERM with
 * @reason, and no session opens.  A session that is gone (closed, evicted,
 * or forgotten by a restarted MDS) is nothing to reclaim: 0.
 * No lock held; blocks while the store fence is set.
 */
static int reclaim_sid(struct mds *m, struct conn *c, uint64_t sid, const uint8_t *uuid, const char *client_name,
		       const char *by, bool blocklist, char *reason, size_t len)
{
	static const uint8_t zero[16];
	const char *me = c->auth == CONN_AUTH_DONE ? c->auth_name : "";
	char why[384], u[40];
	struct session *s;

	blocklist_uuid_str(uuid, u, sizeof(u));
	pthread_mutex_lock(&m->lock);
	s = xa_load(&m->sessions, sid);
	if (!s || !memcmp(uuid, zero, 16) || memcmp(s->uuid, uuid, 16)) {
		pthread_mutex_unlock(&m->lock);
		dinfo(MDS, "peer %s: %s reclaims session %" PRIu64 " (client %s): gone already, nothing to reclaim",
		      c->peer, client_name ? client_name : "?", sid, u);
		return 0;
	}
	if (strcmp(s->auth_name, me)) {
		pthread_mutex_unlock(&m->lock);
		snprintf(reason, len, "session %" PRIu64 " to reclaim belongs to another authenticated name than %s",
			 sid, *me ? me : "(unauthenticated)");
		return -EPERM;
	}
	if (sid == c->session_id) {
		pthread_mutex_unlock(&m->lock);
		snprintf(reason, len, "session %" PRIu64 " is the reclaimer's own", sid);
		return -EINVAL;
	}
	snprintf(why, sizeof(why), "reclaimed by %s %s from %s (session %s was %s)", by,
		 client_name ? client_name : "?", c->peer, u, s->client_name ? s->client_name : "?");
	pthread_mutex_unlock(&m->lock);
	if (session_evict_how(m, sid, why, blocklist) == 0)
		perf_inc(&m->sessions_reclaimed, 1);
	return 0;
}

static int session_reclaim(struct mds *m, struct conn *c, const struct mdsp_session *msg, char *reason,
			   size_t len)
{
	int r = reclaim_sid(m, c, msg->reclaim_sid, msg->reclaim_uuid, msg->client_name, "its restarted client",
			    cfg_bool(CFG_mds_session_blocklist_on_evict), reason, len);

	if (r == -EPERM)
		snprintf(reason + strlen(reason), len - strlen(reason), ": not reclaimed, and no session opened");
	return r;
}

void session_reclaim_request(struct mds *m, struct conn *c, const struct mdsp_request *req, int *result)
{
	char reason[512] = "", name[160] = "?";
	uint64_t me;
	int r;

	pthread_mutex_lock(&m->lock);
	me = c->session_id;
	if (me) {
		struct session *s = xa_load(&m->sessions, me);

		if (s && s->client_name)
			snprintf(name, sizeof(name), "%s", s->client_name);
	}
	pthread_mutex_unlock(&m->lock);
	if (!me) {
		*result = -ENOTCONN;
		return;
	}
	if (req->data_len != 16 || !req->ino) {
		*result = -EINVAL;
		return;
	}
	/* a takeover is exactly when the other one may still be alive: always fenced */
	r = reclaim_sid(m, c, req->ino, req->data, name, "the gateway taking over its NFS clients,", true, reason,
			sizeof(reason));
	if (r)
		derr(MDS, "peer %s: session %" PRIu64 " reclaims session %" PRIu64 ": refused: %s", c->peer, me,
		     req->ino, reason);
	*result = r;
}

void session_handle_caps(struct mds *m, struct conn *c, struct mdsp_caps *msg)
{
	/* ignored silently, a flush would never be acked: the client waits */
	if (locker_handle_caps(m, c, msg) == -ENOTCONN)
		send_session(m, c, MDSP_SESSION_REJECT, 0, 0, -ENOTCONN, "no session on this connection");
}

void session_handle(struct mds *m, struct conn *c, struct mdsp_session *msg)
{
	struct session *s;
	struct jitem *it;
	uint64_t sid;

	switch (msg->op) {
	case MDSP_SESSION_REQUEST_OPEN: {
		struct txn t;
		int ro;
		uint8_t v[8];
		char reason[512];
		int err;

		pthread_mutex_lock(&m->lock);
		if ((err = blocklist_check_locked(m, msg->client_uuid, msg->store_addr, reason, sizeof(reason)))) {
			pthread_mutex_unlock(&m->lock);
			perf_inc(&m->sessions_refused, 1);
			derr(MDS, "peer %s: session open by %s refused: %s", c->peer,
			     msg->client_name ? msg->client_name : "?", reason);
			send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, err, reason);
			return;
		}
		if (c->session_id) {
			sid = c->session_id;
			pthread_mutex_unlock(&m->lock);
			send_session(m, c, MDSP_SESSION_REJECT, sid, 0, -EISCONN,
				     "this connection already has a session");
			return;
		}
		if (atomic_load(&m->refuse_client_session)) {
			pthread_mutex_unlock(&m->lock);
			perf_inc(&m->sessions_refused, 1);
			dinfo(MDS, "peer %s: session open by %s refused: refuse_client_session is set", c->peer,
			      msg->client_name ? msg->client_name : "?");
			send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, -EPERM,
				     "the filesystem refuses new client sessions (an operator set refuse_client_session; "
				     "`loligo fs set NAME refuse_client_session false` lifts it); sessions that exist may "
				     "reconnect");
			return;
		}
		/* a new session is journaled: not while journal writes fail */
		if ((ro = journal_read_only(m))) {
			pthread_mutex_unlock(&m->lock);
			send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, ro,
				     "the MDS is read-only: its journal cannot be written (see `loligo status`); "
				     "try again once it is read-write");
			return;
		}
		if (msg->reclaim_sid) {
			/* the dead predecessor goes first (its slot too, for the limits below) */
			pthread_mutex_unlock(&m->lock);
			if ((err = session_reclaim(m, c, msg, reason, sizeof(reason)))) {
				perf_inc(&m->sessions_refused, 1);
				derr(MDS, "peer %s: session open by %s refused: %s", c->peer,
				     msg->client_name ? msg->client_name : "?", reason);
				send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, err, reason);
				return;
			}
			pthread_mutex_lock(&m->lock);
		}
		err = session_limits_locked(m, c, reason, sizeof(reason));
		if (err) {
			pthread_mutex_unlock(&m->lock);
			perf_inc(&m->sessions_refused, 1);
			derr(MDS, "peer %s: session open by %s refused: %s", c->peer,
			     msg->client_name ? msg->client_name : "?", reason);
			send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, err, reason);
			return;
		}
		sid = m->next_sid++;
		s = session_new_locked(m, sid);
		it = session_item_new(c, sid);
		if (!s || !it) {
			if (s)
				session_free_locked(m, s);
			free(it);
			pthread_mutex_unlock(&m->lock);
			send_session(m, c, MDSP_SESSION_REJECT, 0, 0, -ENOMEM, "out of memory");
			return;
		}
		s->client_name = strdup(msg->client_name ? msg->client_name : "");
		session_take_meta(s, msg);
		memcpy(s->uuid, msg->client_uuid, 16);
		s->store_addr = msg->store_addr && *msg->store_addr ? strdup(msg->store_addr) : NULL;
		flock_session_open_locked(m, s);
		snprintf(s->peer_addr, sizeof(s->peer_addr), "%s", c->peer_addr);
		if (c->auth == CONN_AUTH_DONE) {
			/* both sides derived it in the handshake: it never travels */
			memcpy(s->secret, c->session_secret, MDSP_KEY_LEN);
			snprintf(s->auth_name, sizeof(s->auth_name), "%s", c->auth_name);
		} else if (mdsp_random(s->secret, MDSP_KEY_LEN)) {
			session_free_locked(m, s);
			pthread_mutex_unlock(&m->lock);
			mdsp_buf_free(&it->frame);
			free(it);
			send_session(m, c, MDSP_SESSION_REJECT, 0, 0, -EIO, "no random bytes for the session secret");
			return;
		}
		s->state = SESSION_OPEN;
		s->reconnected = true;
		s->last_renew_ns = now_mono_ns();
		bind_conn_locked(m, s, c);
		txn_init(&t);
		le64_put(v, m->next_sid);
		txn_edit(&t, EDIT_SET, OID_TABLE, "next_sid", v, 8, NULL);
		/* the first ino grant rides with the open, so the first creates
		 * take inos that are durable in the pool already; not while
		 * restored sessions may still replay creates whose own grant the
		 * crash lost (prealloc.c) */
		if (!m->reconnecting)
			prealloc_grant_locked(m, s, &t);
		session_rec_edit_locked(s, &t);
		session_frame_secret(m, &it->frame, MDSP_SESSION_OPEN, sid, msg->seq,
				     c->auth == CONN_AUTH_DONE ? NULL : s->secret);
		journal_submit_locked(m, &t, it);
		txn_free(&t);
		perf_inc(&m->sessions_opened, 1);
		dinfo(MDS, "session %" PRIu64 " opened by %s (%s%s%s)", sid, c->peer, s->client_name,
		      *s->auth_name ? ", authenticated as " : ", unauthenticated", s->auth_name);
		pthread_mutex_unlock(&m->lock);
		return;
	}
	case MDSP_SESSION_REQUEST_RENEW:
		pthread_mutex_lock(&m->lock);
		s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
		if (s) {
			s->last_renew_ns = now_mono_ns();
			s->renew_seq = msg->seq;
			if (s->slow_ops != msg->slow_ops)
				dinfo(MDS, "session %" PRIu64 " (%s): %u operations blocked on the client%s%s", s->id,
				      s->client_name ? s->client_name : "?", msg->slow_ops,
				      msg->slow_op ? "; oldest: " : "",
				      msg->slow_op ? msg->slow_op : "");
			s->slow_ops = msg->slow_ops;
			free(s->slow_op);
			s->slow_op = msg->slow_op;   /* taken */
			msg->slow_op = NULL;
			if (s->state == SESSION_STALE)
				dinfo(MDS, "session %" PRIu64 " renewed after going stale", s->id);
			s->state = SESSION_OPEN;
			session_back_locked(m, s);
		}
		sid = s ? s->id : 0;
		pthread_mutex_unlock(&m->lock);
		if (sid)
			send_session(m, c, MDSP_SESSION_RENEW, sid, msg->seq, 0, NULL);
		else
			send_session(m, c, MDSP_SESSION_REJECT, 0, msg->seq, -ENOTCONN, "no session on this connection");
		return;
	case MDSP_SESSION_REQUEST_CLOSE:
		pthread_mutex_lock(&m->lock);
		s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
		if (!s) {
			pthread_mutex_unlock(&m->lock);
			send_session(m, c, MDSP_SESSION_CLOSE, msg->session_id, msg->seq, 0, NULL);
			return;
		}
		sid = s->id;
		it = session_item_new(c, 0);
		if (it)
			session_frame(m, &it->frame, MDSP_SESSION_CLOSE, sid, msg->seq, 0, NULL);
		session_close_locked(m, s, it);
		dinfo(MDS, "session %" PRIu64 " closed by %s", sid, c->peer);
		pthread_mutex_unlock(&m->lock);
		flock_flush(m);
		return;
	case MDSP_SESSION_RECONNECT: {
		uint8_t want[MDSP_MAC_LEN];
		const char *why = NULL;
		struct mdsp_lock *refused = NULL;
		uint32_t nrefused = 0;
		char breason[512];
		int berr;

		pthread_mutex_lock(&m->lock);
		if ((berr = blocklist_check_locked(m, msg->client_uuid, msg->store_addr, breason, sizeof(breason)))) {
			pthread_mutex_unlock(&m->lock);
			perf_inc(&m->sessions_refused, 1);
			derr(MDS, "peer %s: reconnect to session %" PRIu64 " refused: %s", c->peer, msg->session_id,
			     breason);
			send_session(m, c, MDSP_SESSION_REJECT, msg->session_id, msg->seq, berr, breason);
			return;
		}
		s = xa_load(&m->sessions, msg->session_id);
		if (!s) {
			pthread_mutex_unlock(&m->lock);
			dinfo(MDS, "%s: reconnect to unknown session %" PRIu64 " refused", c->peer, msg->session_id);
			send_session(m, c, MDSP_SESSION_REJECT, msg->session_id, msg->seq, -ESTALE,
				     "unknown session (closed or evicted): open a new one");
			return;
		}
		/* only the owner: it proves the session's secret over this
		 * connection's nonces; nothing of the session is touched before */
		if (secret_is_zero(s->secret))
			why = "the session has no secret (opened by an older mds)";
		else if (*s->auth_name && (c->auth != CONN_AUTH_DONE || strcmp(s->auth_name, c->auth_name)))
			why = "the session belongs to another authenticated name";
		else if (mdsp_reconnect_proof(s->secret, s->id, c->cnonce, c->snonce, want) ||
			 !mdsp_mac_equal(want, msg->proof))
			why = "no proof of the session's secret";
		if (why) {
			int err = secret_is_zero(s->secret) ? -ESTALE : -EPERM;

			sid = s->id;
			pthread_mutex_unlock(&m->lock);
			perf_inc(&m->sessions_refused, 1);
			derr(MDS, "peer %s: reconnect to session %" PRIu64 " refused: %s (the session and its "
				  "connection are left alone)", c->peer, sid, why);
			send_session(m, c, MDSP_SESSION_REJECT, sid, msg->seq, err,
				     err == -ESTALE ? "the session cannot be resumed: open a new one"
						    : "not the owner of this session");
			return;
		}
		if (c->session_id && c->session_id != s->id) {
			struct session *o = xa_load(&m->sessions, c->session_id);

			if (o && o->conn == c) {
				o->conn = NULL;
				conn_put(c);
			}
			c->session_id = 0;
		}
		bind_conn_locked(m, s, c);
		session_take_meta(s, msg);
		prealloc_reconnect_locked(s, msg->deleg_tid);
		s->state = SESSION_OPEN;
		s->last_renew_ns = now_mono_ns();
		if (msg->store_addr && *msg->store_addr &&
		    (!s->store_addr || strcmp(s->store_addr, msg->store_addr))) {
			/* a new data-store instance (the client process restarted
			 * its store): the record must name what to fence */
			free(s->store_addr);
			s->store_addr = strdup(msg->store_addr);
			if (!(s->flags & (SESSION_F_MISSED_RECONNECT | SESSION_F_DISCONNECTED | SESSION_F_HELD_LOCKS)))
				session_rec_journal_locked(m, s);
		}
		session_back_locked(m, s);
		if (flock_reconnect_locked(m, s, msg->locks, msg->nlocks, &refused, &nrefused))
			derr(MDS, "session %" PRIu64 ": out of memory for its file locks", s->id);
		sid = s->id;
		/*
		 * The OPEN goes first: the revokes the lost connection swallowed
		 * (locker_session_reconnect sends them again, and new ones for
		 * caps claimed after the reconnect phase) must reach a client
		 * that has left its handshake, or it has no session to apply
		 * them to.  Sends queue and never block: fine under m->lock.
		 */
		send_session_locks(m, c, MDSP_SESSION_OPEN, sid, msg->seq, refused, nrefused);
		locker_session_reconnect(m, s, msg->caps, msg->ncaps);
		pthread_mutex_unlock(&m->lock);
		dinfo(MDS, "session %" PRIu64 " reconnected from %s", sid, c->peer);
		free(refused);
		return;
	}
	case MDSP_SESSION_REQUEST_FLUSH_JOURNAL:
		/* no answer: the SAFE replies it waits for are the answer; a
		 * peer without a session has nothing queued to wait for */
		pthread_mutex_lock(&m->lock);
		sid = c->session_id;
		pthread_mutex_unlock(&m->lock);
		if (sid)
			journal_flush_hint(m);
		return;
	default:
		dout(MDS, 1, "%s: unexpected session op %s ignored", c->peer, mdsp_session_op_name(msg->op));
		return;
	}
}

unsigned session_push_config_locked(struct mds *m)
{
	struct session *s;
	uint64_t idx;
	unsigned n = 0;

	lockdep_assert_held(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (!s->conn || s->state != SESSION_OPEN)
			continue;       /* a reconnect's OPEN carries the settings */
		send_session(m, s->conn, MDSP_SESSION_CONFIG, s->id, 0, 0, NULL);
		n++;
	}
	rcu_read_unlock();
	return n;
}

void session_conn_closed(struct mds *m, struct conn *c)
{
	struct session *s;

	pthread_mutex_lock(&m->lock);
	s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
	if (s && s->conn == c) {
		s->conn = NULL;
		conn_put(c);
		if (!(s->flags & SESSION_F_DISCONNECTED) && !atomic_load(&c->closed_by_stop)) {
			/* after every change it made, in journal order; with its
			 * file locks, a restart waits for it to re-assert them.
			 * Not when we close it to stop: the client did not go,
			 * it comes back to the next MDS (with requests it has
			 * not sent yet, caps, locks), whose reconnect phase
			 * must wait for it as after a crash */
			s->flags |= SESSION_F_DISCONNECTED;
			if (flock_session_has_locks_locked(s))
				s->flags |= SESSION_F_HELD_LOCKS;
			session_rec_journal_locked(m, s);
		}
		dout(MDS, 1, "session %" PRIu64 ": connection %s closed; the session waits for a reconnect", s->id,
		     c->peer);
	}
	flock_conn_closed_locked(m, c);
	c->session_id = 0;
	locker_conn_closed(m, c);
	pthread_mutex_unlock(&m->lock);
	/* the ones its dropped waiters held back in their sessions' order */
	if (atomic_load_explicit(&m->waiters_ready, memory_order_relaxed))
		locker_run_waiters(m);
}

/*
 * Evict session @id.  With @blocklist the client is fenced first (Ceph's
 * order: blocklist, then kill the session): its uuid and data-store
 * address go on the blocklist, so it can open no new session, and the
 * data store refuses its writes (rados blocklist, or the local store's
 * fence) before its caps and locks are given to anyone else.
 */
static int session_evict_how(struct mds *m, uint64_t id, const char *why, bool blocklist)
{
	char uuid[40], reason[512], *addr = NULL, *name = NULL;
	struct session *s;
	struct conn *c = NULL;
	int r;

	pthread_mutex_lock(&m->lock);
	s = xa_load(&m->sessions, id);
	if (!s) {
		pthread_mutex_unlock(&m->lock);
		return -ENOENT;
	}
	blocklist_uuid_str(s->uuid, uuid, sizeof(uuid));
	/* a client that named no instance (no uuid, no store address: a
	 * test tool) cannot be kept out by name: it is evicted only */
	if (!memcmp(s->uuid, (uint8_t[16]){ 0 }, 16) && !s->store_addr)
		blocklist = false;
	else if (!memcmp(s->uuid, (uint8_t[16]){ 0 }, 16))
		snprintf(uuid, sizeof(uuid), "%s", s->store_addr);
	if (blocklist) {
		addr = s->store_addr ? strdup(s->store_addr) : NULL;
		name = s->client_name ? strdup(s->client_name) : NULL;
	}
	pthread_mutex_unlock(&m->lock);
	if (blocklist) {
		r = blocklist_add(m, uuid, addr, cfg_double(CFG_mds_blocklist_expire), why, name, id, NULL, 0);
		if (r)
			derr(MDS, "session %" PRIu64 ": the blocklist entry for client %s could not be added (%s): "
				  "evicting it anyway", id, uuid, strerror(-r));
		snprintf(reason, sizeof(reason), "%s; blocklisted (client %s) for %.0f s: `loligo blocklist rm %s` "
						 "lets it in again", why, uuid, cfg_double(CFG_mds_blocklist_expire), uuid);
	} else {
		snprintf(reason, sizeof(reason), "%s", why);
	}
	free(addr);
	free(name);
	pthread_mutex_lock(&m->lock);
	s = xa_load(&m->sessions, id);
	if (!s) {
		pthread_mutex_unlock(&m->lock);
		return 0;               /* closed meanwhile */
	}
	if (s->conn) {
		c = s->conn;
		conn_get(c);
	}
	session_close_locked(m, s, NULL);
	perf_inc(&m->sessions_evicted, 1);
	pthread_mutex_unlock(&m->lock);
	flock_flush(m);                 /* its locks went to the waiters */
	dinfo(MDS, "session %" PRIu64 " evicted: %s", id, reason);
	if (c) {
		send_session(m, c, MDSP_SESSION_EVICTED, id, 0, blocklist ? -ESHUTDOWN : 0, reason);
		conn_shutdown(c);
		conn_put(c);
	}
	return 0;
}

uint64_t session_reconnect_deadline(struct mds *m)
{
	uint64_t d;

	pthread_mutex_lock(&m->lock);
	d = m->reconnecting ? m->reconnect_until_ns : 0;
	pthread_mutex_unlock(&m->lock);
	return d;
}

void session_reconnect_check(struct mds *m)
{
	bool ended = false;

	pthread_mutex_lock(&m->lock);
	if (m->reconnecting && now_mono_ns() >= m->reconnect_until_ns) {
		reconnect_phase_end_locked(m, "timeout");
		ended = true;
	}
	pthread_mutex_unlock(&m->lock);
	if (ended) {
		flock_flush(m);
		locker_run_waiters(m);
	}
}

int session_evict(struct mds *m, uint64_t id, const char *why)
{
	return session_evict_how(m, id, why, cfg_bool(CFG_mds_session_blocklist_on_evict));
}

int session_evict_timeout(struct mds *m, uint64_t id, const char *why)
{
	return session_evict_how(m, id, why, cfg_bool(CFG_mds_session_blocklist_on_timeout));
}

int session_evict_auth_name(struct mds *m, const char *name, const char *why)
{
	struct session *s;
	uint64_t idx, *ids = NULL;
	size_t n = 0, cap = 0, i;
	int evicted = 0;

	/* the ids under the lock (bookkeeping only), the evictions after it:
	 * each takes the lock itself and fences outside it */
	pthread_mutex_lock(&m->lock);
	cap = m->nsessions;
	ids = cap ? calloc(cap, sizeof(*ids)) : NULL;
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (n == cap)
			break;
		if (*s->auth_name && !strcmp(s->auth_name, name))
			ids[n++] = s->id;
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
	if (cap && !ids)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!session_evict(m, ids[i], why))
			evicted++;
	free(ids);
	return evicted;
}

void session_tick(struct mds *m)
{
	uint64_t now, idx;
	uint64_t timeout = (uint64_t)(cfg_double(CFG_mds_session_timeout) * 1e9);
	uint64_t autoclose = (uint64_t)(cfg_double(CFG_mds_session_autoclose) * 1e9);
	struct session *s;
	struct conn *stale[64];
	uint64_t stale_id[64], evict[64];
	int nstale = 0, nevict = 0, i;

	pthread_mutex_lock(&m->lock);
	/* the clock is read under the lock that opens and renews take to set
	 * last_renew_ns: read before it, a session opened while the ticker
	 * waited for the lock is "renewed in the future", and the unsigned
	 * idle time wrapped to ~584 years: a fresh session was evicted for
	 * "no renew within mds_session_autoclose" (seen under load in
	 * test_mds_auth test_stale_sessions_do_not_delay_restart) */
	now = now_mono_ns();
	if (m->reconnecting && now >= m->reconnect_until_ns)
		reconnect_phase_end_locked(m, "timeout");
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		uint64_t idle = now > s->last_renew_ns ? now - s->last_renew_ns : 0;

		if (idle > autoclose && nevict < 64) {
			evict[nevict++] = s->id;
		} else if (s->state == SESSION_OPEN && idle > timeout) {
			s->state = SESSION_STALE;
			perf_inc(&m->sessions_stale, 1);
			dinfo(MDS, "session %" PRIu64 " (%s) is stale: no renew for %.0f s", s->id, s->client_name,
			      (double)idle / 1e9);
			if (s->conn && nstale < 64) {
				conn_get(s->conn);
				stale_id[nstale] = s->id;
				stale[nstale++] = s->conn;
			}
		}
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
	flock_flush(m);    /* grants the phase's end (timeout) made */
	for (i = 0; i < nstale; i++) {
		send_session(m, stale[i], MDSP_SESSION_STALE, stale_id[i], 0, 0, "lease expired: renew");
		conn_put(stale[i]);
	}
	for (i = 0; i < nevict; i++)
		session_evict_timeout(m, evict[i], "no renew within mds_session_autoclose");
}

struct json_object *session_ls_json(struct mds *m)
{
	struct json_object *a = json_object_new_array();
	uint64_t idx, now = now_mono_ns();
	struct session *s;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_int64((int64_t)s->id));
		json_object_object_add(o, "client_name", json_object_new_string(s->client_name ? s->client_name : ""));
		json_object_object_add(o, "auth_name", json_object_new_string(s->auth_name));
		json_object_object_add(o, "state", json_object_new_string(s->state == SESSION_OPEN ? "open" : "stale"));
		json_object_object_add(o, "addr", json_object_new_string(s->conn ? s->conn->peer : ""));
		json_object_object_add(o, "connected", json_object_new_boolean(s->conn != NULL));
		json_object_object_add(o, "requests", json_object_new_int64((int64_t)s->nreq));
		json_object_object_add(o, "completed_requests", json_object_new_int64((int64_t)s->ncompleted));
		json_object_object_add(o, "oldest_tid", json_object_new_int64((int64_t)s->trimmed_below));
		json_object_object_add(o, "prealloc_inos", json_object_new_int64((int64_t)prealloc_count(s)));
		json_object_object_add(o, "ino_ranges", json_object_new_int64(s->nprealloc));
		json_object_object_add(o, "stale_ino_ranges", json_object_new_int64(prealloc_stale_count(s)));
		json_object_object_add(o, "idle_s", json_object_new_double((double)mono_since(now, s->last_renew_ns) / 1e9));
		/* who the client says it is (SESSION v4 metadata; "" from an older client) */
		{
			static const char *const shown[] = { "hostname", "mount_point", "root", "version", "pid" };

			for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++) {
				const char *v = "";

				for (uint32_t i = 0; i < s->nmeta; i++)
					if (!strcmp(s->meta[i].key, shown[k]))
						v = s->meta[i].val;
				json_object_object_add(o, shown[k], json_object_new_string(v));
			}
		}
		locker_session_json(s, o);
		json_object_object_add(o, "store_addr", json_object_new_string(s->store_addr ? s->store_addr : ""));
		{
			char u[40];

			blocklist_uuid_str(s->uuid, u, sizeof(u));
			json_object_object_add(o, "uuid", json_object_new_string(u));
		}
		flock_session_json_locked(s, o);
		if (s->conn) {
			/* replies its socket has not taken yet (the flusher's work) */
			pthread_mutex_lock(&s->conn->send_lock);
			json_object_object_add(o, "queued_bytes",
					       json_object_new_int64((int64_t)(s->conn->outq.len - s->conn->outq_off)));
			pthread_mutex_unlock(&s->conn->send_lock);
		}
		json_object_array_add(a, o);
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
	return a;
}
