/*
 * test_mds_locks.c - file locks and eviction fencing of loligo-mds over the
 * wire (issue 10 items 3 and 4): two or three sessions of a real MDS on
 * real sockets.
 *
 * fcntl conflicts and F_GETLK (the holder's pid, owner and session),
 * unlock of part of a range, F_SETLKW answered when the holder unlocks (and
 * when its session ends or is evicted), cancelled waits (EINTR, nothing
 * left at the MDS), EDEADLK for a cycle, flock independent of fcntl, the
 * per-session limits, malformed lock requests, and across a kill -9 of the
 * MDS: locks re-asserted in RECONNECT, lock requests held back until they
 * are, a session that comes too late refused its locks, and a lock never
 * granted twice.  Blocklisting: an evicted client cannot open a session
 * until `blocklist rm`, across a restart too.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"

#define ROOT MDSP_ROOT_INO
#define HANG_MS ((int)(lt_hang_ns() / 1000000))  /* a reply that must come: only a hang is later */
static char parent_dir[256];
static struct mdsproc P;
static struct mdsw A, B;
static uint64_t F;              /* a file both sessions lock */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void open_client(struct mdsw *w, const char *name)
{
	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(mdsw_connect(w, P.port), 0);
	ck_assert_int_eq(mdsw_open(w, name), 0);
}

static void setup(void)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=3");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.1");
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	open_client(&A, "client.a");
	open_client(&B, "client.b");
	ck_assert_int_eq(mdsw_create(&A, ROOT, "f", 0644, O_CREAT | O_RDWR, &in), 0);
	F = in.ino;
}

static void teardown(void)
{
	mdsw_close(&A);
	mdsw_close(&B);
	mdsproc_cleanup(&P);
}

/* ---- lock requests on the raw connection -------------------------------- */

static int lk_send(struct mdsw *w, uint32_t op, uint64_t ino, uint32_t type, uint64_t start, uint64_t len,
		   uint64_t owner, uint32_t flags, uint64_t *tid)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;
	int r;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = w->next_tid++;
	msg.request.attempt = 1;
	msg.request.op = op;
	msg.request.ino = ino;
	msg.request.caller = w->caller;
	msg.request.lock.type = type;
	msg.request.lock.flags = flags;
	msg.request.lock.start = start;
	msg.request.lock.len = len;
	msg.request.lock.owner = owner;
	msg.request.lock.pid = 1000 + (uint32_t)owner;
	if (tid)
		*tid = msg.request.tid;
	r = mdsw_encode(w, &msg, &b);
	if (!r)
		r = mdsp_send(w->fd, &b);
	mdsp_buf_free(&b);
	return r;
}

/* The reply to @tid within @ms (0: only one already received; other frames
 * are dropped): its result, or -1000 - ETIMEDOUT when none came. */
static int lk_wait(struct mdsw *w, uint64_t tid, int ms, struct mdsp_lock *out)
{
	uint64_t until = now_ms() + (uint64_t)ms;
	struct mdsp_msg in;
	const char *why;
	int r;

	for (bool first = true;; first = false) {
		int64_t left = (int64_t)(until - now_ms());

		if (left <= 0 && !(ms == 0 && first))  /* 0: what is already there */
			return -1000 - ETIMEDOUT;
		r = mdsp_recv_auth(w->fd, &in, left > 0 ? (int)left : 0, w->rx, &w->in_seq, &why);
		if (r == -ETIMEDOUT)
			return -1000 - ETIMEDOUT;
		if (r)
			return -1000 + r;
		if (in.type == MDSP_MSG_REPLY && in.reply.tid == tid) {
			r = in.reply.result;
			if (out)
				*out = in.reply.lock;
			mdsp_msg_free(&in);
			return r;
		}
		mdsp_msg_free(&in);
	}
}

static int setlk(struct mdsw *w, uint32_t type, uint64_t start, uint64_t len, uint64_t owner, uint32_t flags)
{
	uint64_t tid;

	ck_assert_int_eq(lk_send(w, MDSP_OP_SETLK, F, type, start, len, owner, flags, &tid), 0);
	return lk_wait(w, tid, HANG_MS, NULL);
}

static int getlk(struct mdsw *w, uint32_t type, uint64_t start, uint64_t len, uint64_t owner, struct mdsp_lock *l)
{
	uint64_t tid;

	ck_assert_int_eq(lk_send(w, MDSP_OP_GETLK, F, type, start, len, owner, 0, &tid), 0);
	return lk_wait(w, tid, HANG_MS, l);
}

static void locks_count(int64_t *held, int64_t *waiting);

static int64_t locks_waiting(void)
{
	int64_t held, waiting;

	locks_count(&held, &waiting);
	return waiting;
}

/* SETLKW that must be left waiting: its tid.  The MDS's `locks` counts it
 * as a waiter once it parked it; then no reply may be queued for it (a
 * grant or an error would have been sent before it was parked). */
static uint64_t setlkw_waits(struct mdsw *w, uint32_t type, uint64_t start, uint64_t len, uint64_t owner,
			     uint32_t flags)
{
	int64_t before = locks_waiting();
	uint64_t tid;

	ck_assert_int_eq(lk_send(w, MDSP_OP_SETLK, F, type, start, len, owner, flags | MDSP_LOCK_WAIT, &tid), 0);
	LT_WAIT_UNTIL(locks_waiting() > before, "the MDS never parked SETLKW tid %llu", (unsigned long long)tid);
	ck_assert_int_eq(lk_wait(w, tid, 0, NULL), -1000 - ETIMEDOUT);
	return tid;
}

static struct json_object *asok_json(const char *json)
{
	struct json_object *req = json_tokener_parse(json), *rep = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(asok_request(path, req, &rep, 10000), 0);
	json_object_put(req);
	ck_assert_ptr_nonnull(rep);
	return rep;
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s in %s", k, json_object_to_json_string(o));
	return json_object_get_int64(v);
}

/* `locks`: held and waiting counts */
static void locks_count(int64_t *held, int64_t *waiting)
{
	struct json_object *o = asok_json("{\"prefix\":\"locks\"}");

	*held = jint(o, "held");
	*waiting = jint(o, "waiting");
	json_object_put(o);
}

/* ---- fcntl ---------------------------------------------------------------- */

START_TEST(test_conflict_getlk_and_partial_unlock)
{
	struct mdsp_lock l;
	int64_t held, waiting;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 10, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 5, 1, 2, 0), -EAGAIN);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 10, 5, 2, 0), 0);       /* past A's range */
	/* F_GETLK names A's lock: type, range, pid, owner and session */
	ck_assert_int_eq(getlk(&B, F_WRLCK, 0, 0, 2, &l), 0);
	ck_assert_uint_eq(l.type, F_WRLCK);
	ck_assert_uint_eq(l.start, 0);
	ck_assert_uint_eq(l.len, 10);
	ck_assert_uint_eq(l.pid, 1001);
	ck_assert_uint_eq(l.owner, 1);
	ck_assert_uint_eq(l.session_id, A.sid);
	/* the owner's own lock never conflicts with it; another owner of the
	 * same session does */
	ck_assert_int_eq(getlk(&A, F_WRLCK, 0, 10, 1, &l), 0);
	ck_assert_uint_eq(l.type, F_UNLCK);
	ck_assert_int_eq(setlk(&A, F_WRLCK, 3, 1, 7, 0), -EAGAIN);
	/* unlocking [0, 5) frees only that: byte 5 still conflicts */
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 5, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 5, 2, 0), 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 5, 1, 2, 0), -EAGAIN);
	ck_assert_int_eq(getlk(&B, F_RDLCK, 5, 1, 2, &l), 0);
	ck_assert_uint_eq(l.start, 5);
	ck_assert_uint_eq(l.len, 5);
	/* downgrade to read: B's read lock on it passes, a write still not */
	ck_assert_int_eq(setlk(&A, F_RDLCK, 5, 5, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 6, 1, 3, 0), 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 7, 1, 2, 0), -EAGAIN);
	locks_count(&held, &waiting);
	ck_assert_int_eq(held, 4);          /* A [5,10) r; B [0,5) w, [10,15) r (owner 2), [6] r (owner 3) */
	ck_assert_int_eq(waiting, 0);
	/* a range to EOF and one at the top of the 64-bit space */
	ck_assert_int_eq(setlk(&A, F_WRLCK, 1ull << 62, 0, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, UINT64_MAX, 1, 2, 0), -EAGAIN);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 2, UINT64_MAX, 2, 0), -EINVAL);   /* past 2^64 */
}
END_TEST

START_TEST(test_setlkw_granted_on_unlock)
{
	uint64_t tid;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	tid = setlkw_waits(&B, F_WRLCK, 100, 10, 2, 0);
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 0, 1, 0), 0);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
	ck_assert_int_eq(setlk(&A, F_RDLCK, 105, 1, 1, 0), -EAGAIN);
}
END_TEST

START_TEST(test_setlkw_granted_when_the_session_ends)
{
	struct json_object *o;
	uint64_t tid;
	char cmd[128];

	/* the holder closes its session */
	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	tid = setlkw_waits(&B, F_RDLCK, 0, 1, 2, 0);
	ck_assert_int_eq(mdsw_session_close(&A), 0);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
	ck_assert_int_eq(setlk(&B, F_UNLCK, 0, 0, 2, 0), 0);

	/* the holder is evicted */
	mdsw_close(&A);
	open_client(&A, "client.a2");
	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	tid = setlkw_waits(&B, F_WRLCK, 0, 0, 2, 0);
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"client evict\",\"id\":%llu}", (unsigned long long)A.sid);
	o = asok_json(cmd);
	ck_assert_int_eq(jint(o, "evicted"), (int64_t)A.sid);
	json_object_put(o);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
}
END_TEST

START_TEST(test_cancel_leaves_no_waiter)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;
	uint64_t tid, ctid;
	int64_t held, waiting;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	tid = setlkw_waits(&B, F_WRLCK, 0, 0, 2, 0);
	locks_count(&held, &waiting);
	ck_assert_int_eq(waiting, 1);
	/* the process got a signal: cancel names the waiting tid */
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = ctid = B.next_tid++;
	msg.request.op = MDSP_OP_SETLK;
	msg.request.ino = F;
	msg.request.lock.type = F_UNLCK;
	msg.request.lock.flags = MDSP_LOCK_CANCEL;
	msg.request.lock.owner = 2;
	msg.request.lock.wait_tid = tid;
	ck_assert_int_eq(mdsw_encode(&B, &msg, &b), 0);
	ck_assert_int_eq(mdsp_send(B.fd, &b), 0);
	mdsp_buf_free(&b);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), -EINTR);
	ck_assert_int_eq(lk_wait(&B, ctid, HANG_MS, NULL), 0);
	locks_count(&held, &waiting);
	ck_assert_int_eq(waiting, 0);
	ck_assert_int_eq(held, 1);
	/* the unlock that follows grants nothing to the gone waiter */
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 0, 1, 0), 0);
	locks_count(&held, &waiting);
	ck_assert_int_eq(held, 0);
	/* a cancel of nothing: ENOENT */
	msg.request.tid = ctid = B.next_tid++;
	ck_assert_int_eq(mdsw_encode(&B, &msg, &b), 0);
	ck_assert_int_eq(mdsp_send(B.fd, &b), 0);
	mdsp_buf_free(&b);
	ck_assert_int_eq(lk_wait(&B, ctid, HANG_MS, NULL), -ENOENT);
}
END_TEST

START_TEST(test_connection_loss_keeps_locks_drops_waits)
{
	uint8_t secret[MDSP_KEY_LEN];
	uint64_t sid = B.sid;
	int64_t held, waiting;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 0, 2, 0), -EAGAIN);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 0, 2, 0), -EAGAIN);
	setlkw_waits(&B, F_RDLCK, 0, 0, 2, 0);
	memcpy(secret, B.secret, sizeof(secret));
	mdsw_close(&B);
	/* B's wait goes with its connection; A's lock stays */
	LT_WAIT_UNTIL(locks_waiting() == 0, "B's wait outlived its connection");
	locks_count(&held, &waiting);
	ck_assert_int_eq(waiting, 0);
	ck_assert_int_eq(held, 1);
	/* B comes back on a new connection: A's lock is still there */
	memset(&B, 0, sizeof(B));
	ck_assert_int_eq(mdsw_connect(&B, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect_secret(&B, sid, secret), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 0, 2, 0), -EAGAIN);
}
END_TEST

START_TEST(test_deadlock_detected)
{
	uint64_t tid;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 10, 1, 0), 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 100, 10, 2, 0), 0);
	/* A waits for B's range; B asking for A's closes the cycle */
	tid = setlkw_waits(&A, F_WRLCK, 100, 10, 1, 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 10, 2, MDSP_LOCK_WAIT), -EDEADLK);
	/* without the cycle (another owner of B) it just waits; flock is not checked */
	setlkw_waits(&B, F_WRLCK, 0, 10, 3, 0);
	ck_assert_int_eq(setlk(&B, F_UNLCK, 100, 10, 2, 0), 0);
	ck_assert_int_eq(lk_wait(&A, tid, HANG_MS, NULL), 0);
}
END_TEST

/* ---- flock ---------------------------------------------------------------- */

START_TEST(test_flock)
{
	uint64_t tid;

	/* shared by two, exclusive by none of them; fcntl locks are another world */
	ck_assert_int_eq(setlk(&A, F_RDLCK, 0, 0, 1, MDSP_LOCK_FLOCK), 0);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 0, 2, MDSP_LOCK_FLOCK), 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 0, 3, MDSP_LOCK_FLOCK), -EAGAIN);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 0, 3, 0), 0);           /* fcntl: free */
	/* the second holder converts to exclusive: it waits for the first */
	tid = setlkw_waits(&B, F_WRLCK, 0, 0, 2, MDSP_LOCK_FLOCK);
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 0, 1, MDSP_LOCK_FLOCK), 0);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
	ck_assert_int_eq(setlk(&A, F_RDLCK, 0, 0, 1, MDSP_LOCK_FLOCK), -EAGAIN);
	/* the same type again is no change */
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 0, 2, MDSP_LOCK_FLOCK), 0);
	/* a flock's range is the whole file whatever the request says */
	ck_assert_int_eq(setlk(&A, F_RDLCK, 1000, 1, 1, MDSP_LOCK_FLOCK), -EAGAIN);
}
END_TEST

/* ---- bounds and bad input --------------------------------------------------- */

START_TEST(test_limits_and_bad_input)
{
	struct mdsp_lock l;
	uint64_t i;

	ck_assert_int_eq(mdsproc_config_set(&P, "mds_max_locks_per_session", "8"), 0);
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_max_lock_waiters_per_session", "2"), 0);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(setlk(&A, F_WRLCK, i * 10, 5, 1, 0), 0);
	ck_assert_int_eq(setlk(&A, F_WRLCK, 100, 5, 1, 0), -ENOLCK);
	/* a merge costs nothing new; a split of a full set does */
	ck_assert_int_eq(setlk(&A, F_WRLCK, 5, 5, 1, 0), 0);
	ck_assert_int_eq(setlk(&A, F_WRLCK, 100, 5, 1, 0), 0);
	ck_assert_int_eq(setlk(&A, F_UNLCK, 1, 1, 1, 0), -ENOLCK);
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 0, 1, 0), 0);
	/* waits: two, not three */
	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 0, 1, 0), 0);
	setlkw_waits(&B, F_WRLCK, 0, 1, 2, 0);
	setlkw_waits(&B, F_WRLCK, 0, 1, 3, 0);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 1, 4, MDSP_LOCK_WAIT), -ENOLCK);
	ck_assert_int_eq(setlk(&B, F_WRLCK, 0, 1, 4, 0), -EAGAIN);   /* non-blocking is not a wait */
	/* malformed */
	ck_assert_int_eq(setlk(&B, 7, 0, 1, 2, 0), -EINVAL);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 1, 2, 0x100), -EINVAL);
	ck_assert_int_eq(getlk(&B, F_UNLCK, 0, 1, 2, &l), -EINVAL);
	ck_assert_int_eq(setlk(&B, F_RDLCK, UINT64_MAX - 1, 3, 2, 0), -EINVAL);
	{
		struct mdsp_msg msg;
		struct mdsp_buf b;
		uint64_t tid;

		memset(&msg, 0, sizeof(msg));
		msg.type = MDSP_MSG_REQUEST;
		msg.request.tid = tid = B.next_tid++;
		msg.request.op = MDSP_OP_SETLK;
		msg.request.ino = F;
		msg.request.lock.type = F_RDLCK;
		msg.request.lock.owner_ns = 9;
		ck_assert_int_eq(mdsw_encode(&B, &msg, &b), 0);
		ck_assert_int_eq(mdsp_send(B.fd, &b), 0);
		mdsp_buf_free(&b);
		ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), -EINVAL);
	}
}
END_TEST

/* ---- restarts ------------------------------------------------------------------- */

/* RECONNECT of @sid (whose secret is @secret) on a new connection @w,
 * re-asserting @locks; the number of locks the MDS refused. */
static int reconnect_locks(struct mdsw *w, uint64_t sid, const uint8_t *secret, struct mdsp_lock *locks,
			   uint32_t n, uint32_t *nrefused)
{
	struct mdsp_msg msg, in;
	struct mdsp_buf b;
	const char *why;
	int r;

	memset(w, 0, sizeof(*w));
	if ((r = mdsw_connect(w, P.port)))
		return r;
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = MDSP_SESSION_RECONNECT;
	msg.session.session_id = sid;
	msg.session.locks = locks;
	msg.session.nlocks = n;
	mdsp_reconnect_proof(secret, sid, w->cnonce, w->snonce, msg.session.proof);
	if ((r = mdsw_encode(w, &msg, &b)))
		return r;
	r = mdsp_send(w->fd, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = mdsp_recv_auth(w->fd, &in, 10000, w->rx, &w->in_seq, &why);
		if (r)
			return r;
		if (in.type == MDSP_MSG_SESSION)
			break;
		mdsp_msg_free(&in);
	}
	if (in.session.op != MDSP_SESSION_OPEN) {
		r = in.session.result ? in.session.result : -EPERM;
		mdsp_msg_free(&in);
		return r;
	}
	w->sid = sid;
	memcpy(w->secret, secret, MDSP_KEY_LEN);
	*nrefused = in.session.nlocks;
	mdsp_msg_free(&in);
	return 0;
}

/* Until the MDS saw @sid's connection close, and journaled that (a SAFE
 * mutation of another session after it: entries are durable in order). */
static void wait_disconnected(uint64_t sid)
{
	struct mdsp_inode in;
	struct mdsw w;
	int i;

	for (i = 0; i < 500; i++) {
		struct json_object *a = asok_json("{\"prefix\":\"session ls\"}"), *e, *v;
		bool connected = false;
		size_t k;

		for (k = 0; k < json_object_array_length(a); k++) {
			e = json_object_array_get_idx(a, k);
			if (jint(e, "id") == (int64_t)sid && json_object_object_get_ex(e, "connected", &v))
				connected = json_object_get_boolean(v);
		}
		json_object_put(a);
		if (!connected)
			break;
		usleep(10000);
	}
	ck_assert_int_lt(i, 500);
	open_client(&w, "client.sync");
	ck_assert_int_eq(mdsw_mkdir(&w, ROOT, "synced", 0755, &in) == 0 || mdsw_lookup(&w, ROOT, "synced", &in) == 0,
			 1);
	mdsw_session_close(&w);
	mdsw_close(&w);
}

static void restart_mds(void)
{
	uint16_t port = P.port;

	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	snprintf(P.extra[P.nextra++], 256, "--mds_port=%u", port);
	setenv("LOLIGO_TEST_MDS_PORT_FIXED", "1", 1);   /* the clients reconnect to the same port */
	ck_assert_int_eq(mdsproc_start(&P), 0);
	unsetenv("LOLIGO_TEST_MDS_PORT_FIXED");
	P.nextra--;
	ck_assert_uint_eq(P.port, port);
}

START_TEST(test_restart_reasserts_and_never_grants_twice)
{
	struct mdsp_lock held = { .type = F_WRLCK, .start = 0, .len = 100, .owner = 1, .pid = 1001 };
	uint8_t sa[MDSP_KEY_LEN], sb[MDSP_KEY_LEN];
	uint64_t said = A.sid, sbid = B.sid, tid;
	uint32_t nrefused = 99;
	int64_t nheld, waiting;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 100, 1, 0), 0);
	setlkw_waits(&B, F_WRLCK, 50, 10, 2, 0);
	memcpy(sa, A.secret, sizeof(sa));
	memcpy(sb, B.secret, sizeof(sb));
	mdsw_close(&A);
	mdsw_close(&B);
	restart_mds();

	/* B comes back first and asks again: it must wait for A's re-assertion,
	 * not be granted what the MDS forgot */
	ck_assert_int_eq(reconnect_locks(&B, sbid, sb, NULL, 0, &nrefused), 0);
	ck_assert_uint_eq(nrefused, 0);
	ck_assert_int_eq(lk_send(&B, MDSP_OP_SETLK, F, F_WRLCK, 50, 10, 2, MDSP_LOCK_WAIT, &tid), 0);
	LT_WAIT_UNTIL(locks_waiting() == 1, "the MDS never parked B's SETLKW");
	ck_assert_int_eq(lk_wait(&B, tid, 0, NULL), -1000 - ETIMEDOUT);
	locks_count(&nheld, &waiting);
	ck_assert_int_eq(nheld, 0);
	ck_assert_int_eq(waiting, 1);            /* held back by the reconnect phase */
	held.ino = F;
	ck_assert_int_eq(reconnect_locks(&A, said, sa, &held, 1, &nrefused), 0);
	ck_assert_uint_eq(nrefused, 0);
	/* A sends a request: the phase ends, B's request runs and waits for A */
	{
		struct mdsp_inode in;

		ck_assert_int_eq(mdsw_getattr(&A, ROOT, &in), 0);
	}
	/* deliberate: time for a wrong grant to arrive (B's request runs when
	 * the phase ends, and must then wait for A's re-asserted lock) */
	ck_assert_int_eq(lk_wait(&B, tid, 300, NULL), -1000 - ETIMEDOUT);
	locks_count(&nheld, &waiting);
	ck_assert_int_eq(nheld, 1);
	ck_assert_int_eq(waiting, 1);
	ck_assert_int_eq(setlk(&A, F_RDLCK, 0, 0, 9, 0), -EAGAIN);
	ck_assert_int_eq(setlk(&A, F_UNLCK, 0, 0, 1, 0), 0);
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
}
END_TEST

/* A client that does not come back within mds_reconnect_timeout: the phase
 * ends without it, others may take its range, and its locks are refused when
 * it shows up. */
START_TEST(test_late_reconnect_loses_its_locks)
{
	struct mdsp_lock held = { .type = F_RDLCK, .start = 10, .len = 0, .owner = 1, .pid = 1001 };
	uint8_t sa[MDSP_KEY_LEN], sb[MDSP_KEY_LEN];
	uint64_t said = A.sid, sbid = B.sid, tid;
	uint32_t nrefused = 0;

	ck_assert_int_eq(setlk(&A, F_RDLCK, 10, 0, 1, 0), 0);
	memcpy(sa, A.secret, sizeof(sa));
	memcpy(sb, B.secret, sizeof(sb));
	/* A's connection closes before the crash: its record says it held locks */
	mdsw_close(&A);
	wait_disconnected(said);
	mdsw_close(&B);
	restart_mds();
	ck_assert_int_eq(reconnect_locks(&B, sbid, sb, NULL, 0, &nrefused), 0);
	/* B's lock request waits for A (which held locks when it left) ... */
	ck_assert_int_eq(lk_send(&B, MDSP_OP_SETLK, F, F_WRLCK, 0, 0, 2, MDSP_LOCK_WAIT, &tid), 0);
	/* deliberate: a second of the 3 s phase passes without a grant */
	ck_assert_int_eq(lk_wait(&B, tid, 1000, NULL), -1000 - ETIMEDOUT);
	/* ... until mds_reconnect_timeout (3 s) is over: then it is granted */
	ck_assert_int_eq(lk_wait(&B, tid, HANG_MS, NULL), 0);
	/* A comes late: its lock is refused, and B keeps the one it got */
	held.ino = F;
	ck_assert_int_eq(reconnect_locks(&A, said, sa, &held, 1, &nrefused), 0);
	ck_assert_uint_eq(nrefused, 1);
	ck_assert_int_eq(setlk(&A, F_RDLCK, 10, 0, 1, 0), -EAGAIN);
}
END_TEST

/* A reconnect to the same instance: the MDS checks what is re-asserted. */
START_TEST(test_reconnect_same_instance)
{
	struct mdsp_lock claim[2] = {
		{ .type = F_WRLCK, .start = 0, .len = 10, .owner = 1 },
		{ .type = F_WRLCK, .start = 20, .len = 10, .owner = 1 },   /* never granted */
	};
	uint8_t sa[MDSP_KEY_LEN];
	uint64_t said = A.sid;
	uint32_t nrefused = 0;

	ck_assert_int_eq(setlk(&A, F_WRLCK, 0, 10, 1, 0), 0);
	memcpy(sa, A.secret, sizeof(sa));
	mdsw_close(&A);
	claim[0].ino = claim[1].ino = F;
	ck_assert_int_eq(reconnect_locks(&A, said, sa, claim, 2, &nrefused), 0);
	ck_assert_uint_eq(nrefused, 1);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 0, 1, 2, 0), -EAGAIN);
	ck_assert_int_eq(setlk(&B, F_RDLCK, 20, 1, 2, 0), 0);
}
END_TEST

/* ---- blocklist ---------------------------------------------------------------------- */

static int open_as(struct mdsw *w, const uint8_t *uuid, const char *store_addr, char *reason, size_t rlen)
{
	struct mdsp_msg msg, in;
	struct mdsp_buf b;
	const char *why;
	int r;

	memset(w, 0, sizeof(*w));
	if ((r = mdsw_connect(w, P.port)))
		return r;
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_SESSION;
	msg.session.op = MDSP_SESSION_REQUEST_OPEN;
	msg.session.client_name = "client.fenced";
	memcpy(msg.session.client_uuid, uuid, 16);
	msg.session.store_addr = (char *)store_addr;
	if ((r = mdsw_encode(w, &msg, &b)))
		return r;
	r = mdsp_send(w->fd, &b);
	mdsp_buf_free(&b);
	if (r)
		return r;
	for (;;) {
		r = mdsp_recv_auth(w->fd, &in, 10000, w->rx, &w->in_seq, &why);
		if (r)
			return r;
		if (in.type == MDSP_MSG_SESSION)
			break;
		mdsp_msg_free(&in);
	}
	r = in.session.op == MDSP_SESSION_OPEN ? 0 : in.session.result;
	if (!r)
		w->sid = in.session.session_id;
	if (reason)
		snprintf(reason, rlen, "%s", in.session.reason ? in.session.reason : "");
	mdsp_msg_free(&in);
	return r;
}

static bool blocklist_has(const char *entity)
{
	struct json_object *a = asok_json("{\"prefix\":\"blocklist ls\"}"), *e, *v;
	bool found = false;
	size_t i;

	for (i = 0; i < json_object_array_length(a); i++) {
		e = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(e, "entity", &v) && !strcmp(json_object_get_string(v), entity))
			found = true;
	}
	json_object_put(a);
	return found;
}

START_TEST(test_evicted_client_stays_out)
{
	static const uint8_t uuid[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	static const uint8_t other[16] = { 0x11 };
	const char *u = "deadbeef-0102-0304-0506-0708090a0b0c";
	struct mdsw C;
	struct json_object *o;
	char cmd[160], reason[512];

	ck_assert_int_eq(open_as(&C, uuid, "local.00000000000000aa", NULL, 0), 0);
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"client evict\",\"id\":%llu}", (unsigned long long)C.sid);
	json_object_put(asok_json(cmd));
	mdsw_close(&C);
	ck_assert(blocklist_has(u));
	{
		/* journaled before the kill below: a SAFE mutation after it */
		struct mdsp_inode in;

		ck_assert_int_eq(mdsw_mkdir(&A, ROOT, "after-evict", 0755, &in), 0);
	}
	/* the same client instance is refused, with the way out in the reason;
	 * so is its data-store address under another uuid */
	ck_assert_int_eq(open_as(&C, uuid, NULL, reason, sizeof(reason)), -ESHUTDOWN);
	ck_assert_ptr_nonnull(strstr(reason, "blocklist rm"));
	mdsw_close(&C);
	ck_assert_int_eq(open_as(&C, other, "local.00000000000000aa", NULL, 0), -ESHUTDOWN);
	mdsw_close(&C);
	/* status counts it */
	o = asok_json("{\"prefix\":\"status\"}");
	ck_assert_int_eq(jint(o, "blocklisted_clients"), 1);
	json_object_put(o);
	/* across a restart too */
	mdsw_close(&A);
	mdsw_close(&B);
	restart_mds();
	ck_assert(blocklist_has(u));
	ck_assert_int_eq(open_as(&C, uuid, NULL, NULL, 0), -ESHUTDOWN);
	mdsw_close(&C);
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"blocklist rm\",\"entity\":\"%s\"}", u);
	json_object_put(asok_json(cmd));
	ck_assert(!blocklist_has(u));
	ck_assert_int_eq(open_as(&C, uuid, NULL, NULL, 0), 0);
	mdsw_close(&C);
	/* by hand, with an expiry */
	snprintf(cmd, sizeof(cmd), "{\"prefix\":\"blocklist add\",\"entity\":\"%s\",\"expire\":1}", u);
	json_object_put(asok_json(cmd));
	ck_assert_int_eq(open_as(&C, uuid, NULL, NULL, 0), -ESHUTDOWN);
	mdsw_close(&C);
	LT_WAIT_UNTIL(!blocklist_has(u), "blocklist entry %s never expired (expire 1 s)", u);
	ck_assert_int_eq(open_as(&C, uuid, NULL, NULL, 0), 0);
	mdsw_close(&C);
	o = asok_json("{\"prefix\":\"blocklist add\",\"entity\":\"not a client\"}");
	ck_assert(json_object_object_get_ex(o, "error", NULL));
	json_object_put(o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_locks");
	TCase *tc = tcase_create("locks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_conflict_getlk_and_partial_unlock);
	tcase_add_test(tc, test_setlkw_granted_on_unlock);
	tcase_add_test(tc, test_setlkw_granted_when_the_session_ends);
	tcase_add_test(tc, test_cancel_leaves_no_waiter);
	tcase_add_test(tc, test_connection_loss_keeps_locks_drops_waits);
	tcase_add_test(tc, test_deadlock_detected);
	tcase_add_test(tc, test_flock);
	tcase_add_test(tc, test_limits_and_bad_input);
	tcase_add_test(tc, test_restart_reasserts_and_never_grants_twice);
	tcase_add_test(tc, test_late_reconnect_loses_its_locks);
	tcase_add_test(tc, test_reconnect_same_instance);
	tcase_add_test(tc, test_evicted_client_stays_out);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_locks", parent_dir, sizeof(parent_dir));
}
