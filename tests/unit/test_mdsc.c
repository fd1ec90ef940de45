/*
 * test_mdsc.c - the MDS session layer (client/mds_client*.c) against a fake
 * MDS: a thread in the test speaking the real protocol (loligo_proto) whose
 * behaviour each test scripts, so that the cases a real MDS cannot be made
 * to produce on demand are exercised deterministically: a reply that stays
 * UNSAFE, a request that is never answered, a dropped connection at a
 * chosen moment, a refused reconnect, a dead or silent MDS at open time.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/mds_client.h"
#include "client/mds_client_int.h"     /* the client mutex, held by test_reply_handled_without_client_mutex */
#include "client/client.h"             /* enum lc_wait */
#include "client/optrack.h"            /* lc_my_slot: what a bg thread waits for */
#include "client/intr.h"               /* lc_intr_fire: test_interrupted_request */
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "tests/lib/wait.h"

/* ---- the fake MDS ------------------------------------------------------ */

enum reply_mode {
	RM_SAFE,        /* one SAFE reply at once */
	RM_UNSAFE,      /* UNSAFE at once; SAFE only when flushed */
	RM_NONE,        /* never answer */
	RM_UNSAFE_LAG,  /* UNSAFE at once, SAFE after 4 more requests arrived */
};

struct rec {
	uint64_t tid, oldest;
	uint32_t attempt, flags, op;
	int conn;
	uint64_t min_unsafe;    /* lowest tid the fake had answered UNSAFE only, at arrival */
};

#define MAX_REC 20000
#define MAX_PEND 4096

struct fake {
	int lfd;
	uint16_t port;
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	/* scripted behaviour, protected by lock */
	enum reply_mode mode;
	bool drop;              /* close the current connection */
	bool flush_safe;        /* send SAFE for every pending UNSAFE tid */
	bool reject_reconnect;
	bool mute;              /* stop reading and answering (a hung MDS) */
	int mute_seen;          /* times the serving loop found mute set (it reads nothing now) */
	bool evict;             /* send SESSION EVICTED */
	bool reject_nosession;  /* send SESSION REJECT (ENOTCONN): "no session on this connection" */
	int enotconn;           /* answer this many requests with ENOTCONN (as to a connection without a session) */
	bool safe_before_open;  /* on RECONNECT, send pending SAFE replies ahead of the OPEN */
	int hold_accept_ms;     /* after a drop, wait this long before accepting */
	bool hold_accept;       /* accept nothing until the test clears it */
	/* state, protected by lock */
	uint64_t next_sid, sid;
	int nconn, nopen, nreconnect, nrenew;
	int ncaps;              /* CAPS messages received */
	int caps_nrec;          /* nrec when the last CAPS message came (how many requests went before it) */
	uint64_t last_reconnect_sid;
	struct rec *recs;
	int nrec;
	uint64_t pend[MAX_PEND];        /* UNSAFE-answered tids */
	int npend;
	int since_lag;
	uint64_t seq;
};

static struct fake F;

static void fsend(int fd, struct mdsp_msg *m)
{
	struct mdsp_buf b;

	m->seq = ++F.seq;
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, m), 0);
	mdsp_send(fd, &b);
	mdsp_buf_free(&b);
}

static void send_reply(int fd, uint64_t tid, uint32_t flags)
{
	struct mdsp_msg m = { .type = MDSP_MSG_REPLY };

	m.reply.tid = tid;
	m.reply.flags = flags;
	fsend(fd, &m);
}

static void send_session(int fd, uint32_t op, uint64_t sid)
{
	struct mdsp_msg m = { .type = MDSP_MSG_SESSION };

	m.session.op = op;
	m.session.session_id = sid;
	m.session.lease_ms = 60000;
	m.session.mds_epoch = 7;
	if (op == MDSP_SESSION_REJECT) {
		m.session.result = -ESTALE;
		m.session.reason = "session unknown";
	}
	if (op == MDSP_SESSION_EVICTED)
		m.session.reason = "evicted by the admin";
	fsend(fd, &m);
}

static uint64_t min_pend_locked(void)
{
	uint64_t mn = UINT64_MAX;

	for (int i = 0; i < F.npend; i++)
		if (F.pend[i] < mn)
			mn = F.pend[i];
	return mn;
}

/* Serve one connection until it is dropped or the fake stops. */
static void serve(int fd)
{
	struct mdsp_msg m;
	const char *why;
	int r;

	pthread_mutex_lock(&F.lock);
	F.nconn++;
	pthread_mutex_unlock(&F.lock);
	for (;;) {
		pthread_mutex_lock(&F.lock);
		if (F.stop || F.drop) {
			F.drop = false;
			pthread_mutex_unlock(&F.lock);
			break;
		}
		if (F.mute) {
			F.mute_seen++;
			pthread_mutex_unlock(&F.lock);
			usleep(10000);
			continue;
		}
		if (F.evict) {
			F.evict = false;
			send_session(fd, MDSP_SESSION_EVICTED, F.sid);
		}
		if (F.reject_nosession) {
			struct mdsp_msg rj = { .type = MDSP_MSG_SESSION };

			F.reject_nosession = false;
			rj.session.op = MDSP_SESSION_REJECT;
			rj.session.result = -ENOTCONN;
			rj.session.reason = "no session on this connection";
			fsend(fd, &rj);
		}
		if (F.flush_safe) {
			F.flush_safe = false;
			for (int i = 0; i < F.npend; i++)
				send_reply(fd, F.pend[i], MDSP_REPLY_SAFE);
			F.npend = 0;
			pthread_cond_broadcast(&F.cond);
		}
		pthread_mutex_unlock(&F.lock);
		r = mdsp_recv(fd, &m, 20, &why);
		if (r == -ETIMEDOUT)
			continue;
		if (r)
			break;
		pthread_mutex_lock(&F.lock);
		if (m.type == MDSP_MSG_AUTH && m.auth.op == MDSP_AUTH_HELLO) {
			struct mdsp_msg ch = { .type = MDSP_MSG_AUTH };

			ch.auth.op = MDSP_AUTH_CHALLENGE;
			fsend(fd, &ch);
		} else if (m.type == MDSP_MSG_SESSION) {
			switch (m.session.op) {
			case MDSP_SESSION_REQUEST_OPEN:
				F.nopen++;
				F.sid = ++F.next_sid;
				send_session(fd, MDSP_SESSION_OPEN, F.sid);
				break;
			case MDSP_SESSION_RECONNECT:
				F.nreconnect++;
				F.last_reconnect_sid = m.session.session_id;
				if (F.reject_reconnect || m.session.session_id != F.sid) {
					send_session(fd, MDSP_SESSION_REJECT, m.session.session_id);
				} else {
					if (F.safe_before_open) {
						for (int i = 0; i < F.npend; i++)
							send_reply(fd, F.pend[i], MDSP_REPLY_SAFE);
						F.npend = 0;
					}
					send_session(fd, MDSP_SESSION_OPEN, F.sid);
				}
				break;
			case MDSP_SESSION_REQUEST_RENEW:
				F.nrenew++;
				send_session(fd, MDSP_SESSION_RENEW, F.sid);
				break;
			case MDSP_SESSION_REQUEST_CLOSE:
				send_session(fd, MDSP_SESSION_CLOSE, F.sid);
				break;
			}
		} else if (m.type == MDSP_MSG_REQUEST) {
			struct mdsp_request *q = &m.request;
			bool replay = q->flags & MDSP_REQ_REPLAY;

			if (F.nrec < MAX_REC)
				F.recs[F.nrec++] = (struct rec){ q->tid, q->oldest_tid, q->attempt, q->flags, q->op,
								 F.nconn, min_pend_locked() };
			if (F.enotconn > 0 && !replay) {
				struct mdsp_msg rm = { .type = MDSP_MSG_REPLY };

				F.enotconn--;
				rm.reply.tid = q->tid;
				rm.reply.flags = MDSP_REPLY_SAFE;
				rm.reply.result = -ENOTCONN;
				fsend(fd, &rm);
			} else if (replay) {
				/* answered from the completed table */
				for (int i = 0; i < F.npend; i++)
					if (F.pend[i] == q->tid)
						F.pend[i] = F.pend[--F.npend];
				send_reply(fd, q->tid, MDSP_REPLY_SAFE | MDSP_REPLY_REPLAYED);
			} else if (F.mode == RM_SAFE) {
				send_reply(fd, q->tid, MDSP_REPLY_SAFE);
			} else if (F.mode == RM_UNSAFE || F.mode == RM_UNSAFE_LAG) {
				bool known = false;

				send_reply(fd, q->tid, MDSP_REPLY_UNSAFE);
				for (int i = 0; i < F.npend; i++)
					known |= F.pend[i] == q->tid;
				if (!known && F.npend < MAX_PEND)
					F.pend[F.npend++] = q->tid;
				if (F.mode == RM_UNSAFE_LAG && ++F.since_lag >= 4 && F.npend > 0) {
					/* make the oldest pending one safe */
					int oi = 0;

					for (int i = 1; i < F.npend; i++)
						if (F.pend[i] < F.pend[oi])
							oi = i;
					send_reply(fd, F.pend[oi], MDSP_REPLY_SAFE);
					F.pend[oi] = F.pend[--F.npend];
				}
			}
			pthread_cond_broadcast(&F.cond);
		} else if (m.type == MDSP_MSG_CAPS) {
			F.ncaps++;
			F.caps_nrec = F.nrec;
			pthread_cond_broadcast(&F.cond);
		}
		pthread_mutex_unlock(&F.lock);
		mdsp_msg_free(&m);
	}
	close(fd);
}

static void *fake_main(void *arg)
{
	int hold;

	for (;;) {
		struct pollfd p = { .fd = F.lfd, .events = POLLIN };

		pthread_mutex_lock(&F.lock);
		if (F.stop) {
			pthread_mutex_unlock(&F.lock);
			break;
		}
		hold = F.hold_accept_ms;
		F.hold_accept_ms = 0;
		if (F.hold_accept) {
			pthread_mutex_unlock(&F.lock);
			usleep(5000);
			continue;
		}
		pthread_mutex_unlock(&F.lock);
		if (hold)
			usleep((useconds_t)hold * 1000);
		if (poll(&p, 1, 20) == 1) {
			int fd = accept(F.lfd, NULL, NULL);

			if (fd >= 0)
				serve(fd);
		}
	}
	return NULL;
}

static int listen_any(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A listener that answers whatever a peer sends with one byte (an MDS that
 * is alive as far as the probe can tell), on a thread until @stop. */
struct answerer {
	int fd;
	atomic_bool stop;
	pthread_t t;
};

static void *answer_main(void *arg)
{
	struct answerer *a = arg;

	while (!atomic_load(&a->stop)) {
		struct pollfd p = { .fd = a->fd, .events = POLLIN };
		char buf[512];
		int c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		c = accept(a->fd, NULL, NULL);
		if (c < 0)
			continue;
		/* the probe may have gone meanwhile: nothing to do then */
		if (read(c, buf, sizeof(buf)) > 0 && write(c, "x", 1) != 1)
			dout(CLIENT, 1, "answerer: the probe went before the answer");
		close(c);
	}
	return NULL;
}

static void answerer_start(struct answerer *a, int fd)
{
	a->fd = fd;
	atomic_store(&a->stop, false);
	ck_assert_int_eq(pthread_create(&a->t, NULL, answer_main, a), 0);
}

static void answerer_stop(struct answerer *a)
{
	atomic_store(&a->stop, true);
	pthread_join(a->t, NULL);
	close(a->fd);
}

static void set_opt(const char *name, const char *val)
{
	char err[256];

	ck_assert_int_eq(cfg_set(cfg_lookup(name), val, false, err, sizeof(err)), 0);
}

static void setup(void)
{
	log_init("test_mdsc");
	cfg_init("client");
	set_opt("client_reconnect_backoff_min", "0.02");
	set_opt("client_reconnect_backoff_max", "0.1");
	set_opt("client_connect_timeout", "2");
	set_opt("client_keyring", "");  /* the fake takes clients without a key */
	memset(&F, 0, sizeof(F));
	F.recs = calloc(MAX_REC, sizeof(*F.recs));
	pthread_mutex_init(&F.lock, NULL);
	pthread_cond_init(&F.cond, NULL);
	F.lfd = listen_any(&F.port);
	F.mode = RM_SAFE;
	pthread_create(&F.thr, NULL, fake_main, NULL);
}

static void teardown(void)
{
	pthread_mutex_lock(&F.lock);
	F.stop = true;
	pthread_mutex_unlock(&F.lock);
	pthread_join(F.thr, NULL);
	close(F.lfd);
	free(F.recs);
}

static struct mds_client *new_client(void)
{
	struct mds_client *m;
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", F.port);
	ck_assert_int_eq(mdsc_create(addr, "client.test", NULL, NULL, &m), 0);
	return m;
}

static struct mds_request *mkreq(struct mds_client *m, uint32_t op, const char *name)
{
	struct mds_request *r = mdsc_request_new(m, op);

	ck_assert_ptr_nonnull(r);
	r->args.ino = MDSP_ROOT_INO;
	r->args.name = name ? strdup(name) : NULL;
	return r;
}

static int fake_nrec(void)
{
	int n;

	pthread_mutex_lock(&F.lock);
	n = F.nrec;
	pthread_mutex_unlock(&F.lock);
	return n;
}

/* Wait until the fake has recorded @n requests. */
static void wait_recs(int n)
{
	LT_WAIT_UNTIL(fake_nrec() >= n, "the fake MDS recorded %d requests, not %d", fake_nrec(), n);
}

static void fake_set(enum reply_mode mode)
{
	pthread_mutex_lock(&F.lock);
	F.mode = mode;
	pthread_mutex_unlock(&F.lock);
}

static void fake_flush(void)
{
	pthread_mutex_lock(&F.lock);
	F.flush_safe = true;
	pthread_mutex_unlock(&F.lock);
}

static void fake_drop(int hold_ms)
{
	pthread_mutex_lock(&F.lock);
	F.drop = true;
	F.hold_accept_ms = hold_ms;
	pthread_mutex_unlock(&F.lock);
}

/* Drop the connection and accept no new one until fake_release(). */
static void fake_drop_hold(void)
{
	pthread_mutex_lock(&F.lock);
	F.drop = true;
	F.hold_accept = true;
	pthread_mutex_unlock(&F.lock);
}

static void fake_release(void)
{
	pthread_mutex_lock(&F.lock);
	F.hold_accept = false;
	pthread_mutex_unlock(&F.lock);
}

/* Wait (bounded, generously) until the session is no longer open. */
static void wait_not_open(struct mds_client *m)
{
	LT_WAIT_UNTIL(!mdsc_is_open(m), "the session is still open");
}

/* A thread running one blocking session-layer call. */
struct bg {
	pthread_t t;
	struct mds_client *m;
	struct mds_request *req;
	int what;               /* 0 do_request, 1 wait_safe, 2 sync */
	_Atomic int done;
	int ret;
	struct lc_op_slot slot; /* the thread's operation slot: .wait says what it is parked on */
};

static void *bg_main(void *arg)
{
	struct bg *b = arg;

	/* a tracked operation, so that the session layer's lc_op_wait_set
	 * tells the test when this thread is parked, and on what */
	b->slot.depth = 1;
	lc_my_slot = &b->slot;
	if (b->what == 0)
		b->ret = mdsc_do_request(b->m, b->req);
	else if (b->what == 1)
		b->ret = mdsc_wait_safe(b->m, b->req);
	else
		b->ret = mdsc_sync(b->m);
	atomic_store(&b->done, 1);
	return NULL;
}

static void bg_start(struct bg *b, struct mds_client *m, struct mds_request *req, int what)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->req = req;
	b->what = what;
	pthread_create(&b->t, NULL, bg_main, b);
}

/* Until @b's thread is parked waiting for a reply to @tid (or returned:
 * the caller's assertion on .done says which it should be). */
static void bg_wait_parked(struct bg *b, uint64_t tid)
{
	LT_WAIT_UNTIL((atomic_load(&b->slot.wait) == LC_WAIT_MDS && atomic_load(&b->slot.wait_arg) == tid) ||
			      atomic_load(&b->done),
		      "the thread never waited for tid %llu", (unsigned long long)tid);
}

static int bg_join(struct bg *b)
{
	pthread_join(b->t, NULL);
	return b->ret;
}

/* @field of histogram @name ("count", "max_ns", ...), or a counter's value */
static uint64_t perf_hist_field(const char *name, const char *field)
{
	struct json_object *d = perf_dump_json(), *g, *h, *c;
	uint64_t v = UINT64_MAX;

	if (json_object_object_get_ex(d, "mds_client", &g) && json_object_object_get_ex(g, name, &h)) {
		if (json_object_object_get_ex(h, field, &c))
			v = (uint64_t)json_object_get_int64(c);
		else
			v = (uint64_t)json_object_get_int64(h);
	}
	json_object_put(d);
	return v;
}

static uint64_t perf_hist_count(const char *name)
{
	return perf_hist_field(name, "count");
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(test_frame_seq_patch)
{
	/* mdsc_conn_send patches seq and crc into a frame encoded with seq 0:
	 * the result must decode exactly like a frame encoded with that seq. */
	struct mds_client *m = new_client();
	struct mds_request *r = mkreq(m, MDSP_OP_GETATTR, NULL);

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	ck_assert_int_eq(mdsc_do_request(m, r), 0);     /* the fake decoded (crc checked) our frames */
	ck_assert_int_eq(r->result, 0);
	ck_assert_ptr_nonnull(r->reply);
	mdsc_request_put(r);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_unsafe_then_safe)
{
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_MKDIR, "a"), *b;
	struct bg ws, sy;
	uint64_t tid;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);     /* returns on the UNSAFE reply */
	tid = a->args.tid;
	ck_assert_uint_eq(mdsc_oldest_tid(m), tid);     /* still registered */
	bg_start(&ws, m, a, 1);
	bg_start(&sy, m, NULL, 2);
	bg_wait_parked(&ws, tid);
	bg_wait_parked(&sy, tid);
	ck_assert_int_eq(atomic_load(&ws.done), 0);     /* wait_safe waits for SAFE */
	ck_assert_int_eq(atomic_load(&sy.done), 0);     /* and so does sync */
	fake_flush();
	ck_assert_int_eq(bg_join(&ws), 0);
	ck_assert_int_eq(bg_join(&sy), 0);
	ck_assert_uint_gt(mdsc_oldest_tid(m), tid);

	/* the next request carries the advanced oldest_tid */
	fake_set(RM_SAFE);
	b = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, b), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_uint_eq(F.recs[F.nrec - 1].tid, b->args.tid);
	ck_assert_uint_eq(F.recs[F.nrec - 1].oldest, b->args.tid);
	pthread_mutex_unlock(&F.lock);
	ck_assert_uint_eq(mdsc_oldest_tid(m), b->args.tid + 1);
	/* one hold_handle_reply record per reply (that no reply takes the
	 * client mutex is test_reply_handled_without_client_mutex's) */
	ck_assert_uint_eq(perf_hist_count("hold_handle_reply"), 3);
	ck_assert_uint_ge(perf_hist_count("hold_submit_request"), 2);
	mdsc_request_put(a);
	mdsc_request_put(b);
	mdsc_destroy(m);
}
END_TEST

/*
 * The reply path never takes the client mutex (mds_client.c's opening
 * comment): the test holds that mutex while a SAFE reply arrives, and the
 * waiter for it must wake all the same.  A handler that took the mutex
 * would block on the test's hold, and the wait below would fail.
 */
START_TEST(test_reply_handled_without_client_mutex)
{
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_MKDIR, "a");
	struct bg ws;
	bool delivered;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);     /* UNSAFE: the SAFE reply is still to come */
	bg_start(&ws, m, a, 1);
	bg_wait_parked(&ws, a->args.tid);
	ck_assert_int_eq(atomic_load(&ws.done), 0);
	pthread_mutex_lock(&m->mutex);
	fake_flush();                                   /* the fake sends SAFE now */
	delivered = LT_WAITED(atomic_load(&ws.done));
	pthread_mutex_unlock(&m->mutex);
	ck_assert_msg(delivered, "the SAFE reply was not delivered while the test held the client mutex");
	ck_assert_int_eq(bg_join(&ws), 0);
	mdsc_request_put(a);
	mdsc_destroy(m);
}
END_TEST

struct worker {
	struct mds_client *m;
	int n, fails;
	pthread_t t;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < w->n; i++) {
		struct mds_request *r = mkreq(w->m, i % 3 ? MDSP_OP_GETATTR : MDSP_OP_CREATE, "x");

		if (mdsc_do_request(w->m, r) != 0)
			w->fails++;
		mdsc_request_put(r);
	}
	return NULL;
}

START_TEST(test_concurrent_oldest_tid)
{
	/* 16 threads, replies UNSAFE first and SAFE a few requests later: every
	 * request must carry an oldest_tid no higher than any tid the MDS has
	 * only answered UNSAFE (else it could trim a result it still needs). */
	struct mds_client *m = new_client();
	struct worker w[16];
	int total = 0;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE_LAG);
	for (int i = 0; i < 16; i++) {
		w[i] = (struct worker){ .m = m, .n = 150 };
		pthread_create(&w[i].t, NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_int_eq(w[i].fails, 0);
		total += w[i].n;
	}
	fake_flush();
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_uint_eq(mdsc_last_tid(m), (uint64_t)total);
	ck_assert_uint_eq(mdsc_oldest_tid(m), (uint64_t)total + 1);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nrec, total);
	for (int i = 0; i < F.nrec; i++) {
		ck_assert_uint_le(F.recs[i].oldest, F.recs[i].tid);
		ck_assert_uint_le(F.recs[i].oldest, F.recs[i].min_unsafe);
		ck_assert_uint_eq(F.recs[i].attempt, 1);
	}
	pthread_mutex_unlock(&F.lock);
	ck_assert_uint_eq(perf_hist_count("hold_submit_request"), (uint64_t)total);
	ck_assert_uint_ge(perf_hist_count("hold_do_request"), (uint64_t)total);
	ck_assert_uint_ge(perf_hist_count("hold_handle_reply"), (uint64_t)total);
	mdsc_destroy(m);
}
END_TEST

/*
 * client_mds_locking=before (the benchmark's comparison shape): the same
 * results, with the client mutex held around registration+send (one
 * submit_request section, no do_request one) and around reply handling.
 */
START_TEST(test_locking_before)
{
	struct mds_client *m;
	struct mds_request *a, *b;
	struct worker w[8];
	int i;

	set_opt("client_mds_locking", "before");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	a = mkreq(m, MDSP_OP_MKDIR, "a");
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	ck_assert(a->reply->flags & MDSP_REPLY_UNSAFE);
	fake_flush();
	ck_assert_int_eq(mdsc_wait_safe(m, a), 0);
	fake_set(RM_SAFE);
	b = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, b), 0);
	ck_assert_uint_eq(mdsc_oldest_tid(m), b->args.tid + 1);
	for (i = 0; i < 8; i++) {
		w[i] = (struct worker){ .m = m, .n = 200 };
		pthread_create(&w[i].t, NULL, worker_main, &w[i]);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_int_eq(w[i].fails, 0);
	}
	/* a reply's hold is recorded when its section ends, after the waiter it
	 * woke may have returned: wait for the last one */
	LT_WAIT_UNTIL(perf_hist_count("hold_handle_reply") >= 3 + 8 * 200, "%llu hold_handle_reply records",
		      (unsigned long long)perf_hist_count("hold_handle_reply"));
	ck_assert_uint_eq(perf_hist_count("hold_handle_reply"), 3 + 8 * 200);
	ck_assert_uint_gt(perf_hist_field("hold_handle_reply", "max_ns"), 0);
	ck_assert_uint_eq(perf_hist_count("hold_submit_request"), 2 + 8 * 200);
	ck_assert_uint_eq(perf_hist_count("hold_do_request"), 0);
	mdsc_request_put(a);
	mdsc_request_put(b);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_reconnect_replay_order)
{
	/* A got UNSAFE, B got nothing; the connection drops; C is submitted while
	 * there is no session.  On reconnect: RECONNECT with the old id, then A
	 * with REPLAY, then B with RETRY (tid order), then C fresh. */
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_CREATE, "a"), *b = mkreq(m, MDSP_OP_CREATE, "b");
	struct mds_request *c = mkreq(m, MDSP_OP_CREATE, "c");
	struct bg bb, bc, ws;
	uint64_t sid;
	int base;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	sid = F.sid;
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	fake_set(RM_NONE);
	bg_start(&bb, m, b, 0);
	wait_recs(2);
	ck_assert_int_eq(atomic_load(&bb.done), 0);
	bg_start(&ws, m, a, 1);

	fake_drop_hold();
	wait_not_open(m);
	fake_set(RM_SAFE);
	bg_start(&bc, m, c, 0);          /* parks on the wait list */
	for (int i = 0; i < 2500 && perf_hist_count("waiting") < 1; i++)
		usleep(2000);
	ck_assert_uint_eq(perf_hist_count("waiting"), 1);
	fake_release();
	ck_assert_int_eq(bg_join(&bb), 0);
	ck_assert_int_eq(bg_join(&bc), 0);
	ck_assert_int_eq(bg_join(&ws), 0);
	ck_assert(mdsc_is_open(m));

	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 1);
	ck_assert_uint_eq(F.last_reconnect_sid, sid);
	ck_assert_int_eq(F.nopen, 1);
	ck_assert_int_eq(F.nrec, 5);
	base = 2;
	ck_assert_uint_eq(F.recs[base].tid, a->args.tid);
	ck_assert_uint_eq(F.recs[base].flags, MDSP_REQ_REPLAY);
	ck_assert_uint_eq(F.recs[base].attempt, 2);
	ck_assert_uint_eq(F.recs[base + 1].tid, b->args.tid);
	ck_assert_uint_eq(F.recs[base + 1].flags, MDSP_REQ_RETRY);
	ck_assert_uint_eq(F.recs[base + 1].attempt, 2);
	ck_assert_uint_eq(F.recs[base + 2].tid, c->args.tid);
	ck_assert_uint_eq(F.recs[base + 2].flags, 0);
	ck_assert_uint_eq(F.recs[base + 2].attempt, 1);
	ck_assert_int_eq(F.recs[base].conn, 2);
	pthread_mutex_unlock(&F.lock);
	ck_assert_uint_eq(mdsc_oldest_tid(m), c->args.tid + 1);
	mdsc_request_put(a);
	mdsc_request_put(b);
	mdsc_request_put(c);
	mdsc_destroy(m);
}
END_TEST

static int fake_ncaps(void);

/* session_event of test_new_request_after_waiting: at the moment the
 * session is open again but the wait list is not sent yet, sends a caps
 * flush and submits D, and returns once D is either sent (the bug) or
 * waiting for the wait list */
static struct {
	struct mds_client *m;
	struct mds_request *d;
	struct bg bd;
	bool started;
	int caps_r;
} late;

static void late_submit(void *arg, uint32_t op)
{
	struct mdsp_caps fl = { .op = MDSP_CAPS_FLUSH, .ino = 0x1234, .dirty = MDSP_DIRTY_SIZE, .flush_tid = 1 };

	(void)arg;
	if (op != MDSP_SESSION_RECONNECT || late.started)
		return;
	late.started = true;
	late.caps_r = mdsc_send_caps(late.m, &fl);
	bg_start(&late.bd, late.m, late.d, 0);
	LT_WAIT_UNTIL(atomic_load(&late.bd.slot.wait) == LC_WAIT_SESSION || fake_nrec() >= 2,
		      "the late request was neither sent nor held");
}

/*
 * A request submitted after the session opened again, while the requests
 * that waited for it are not sent yet, goes after them: C (a create that
 * waited) is sent before D (submitted right at the open, say a chmod of
 * what C creates), and so is a caps flush sent then (of the file C
 * creates, say).  D and the flush went first before.
 */
START_TEST(test_new_request_after_waiting)
{
	struct mdsc_ops ops = { .session_event = late_submit };
	struct mds_client *m;
	struct mds_request *a, *c;
	struct bg bc;
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", F.port);
	ck_assert_int_eq(mdsc_create(addr, "client.test", &ops, NULL, &m), 0);
	a = mkreq(m, MDSP_OP_GETATTR, NULL);
	c = mkreq(m, MDSP_OP_CREATE, "c");
	memset(&late, 0, sizeof(late));
	late.m = m;
	late.d = mkreq(m, MDSP_OP_SETATTR, NULL);
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_SAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	fake_drop_hold();
	wait_not_open(m);
	bg_start(&bc, m, c, 0);          /* parks on the wait list */
	LT_WAIT_UNTIL(atomic_load(&m->nr_waiting) == 1, "the create did not wait for the session");
	fake_release();
	ck_assert_int_eq(bg_join(&bc), 0);
	ck_assert(late.started);
	ck_assert_int_eq(late.caps_r, 0);
	ck_assert_int_eq(bg_join(&late.bd), 0);
	LT_WAIT_UNTIL(fake_ncaps() >= 1, "the flush never reached the MDS");
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nrec, 3);
	ck_assert_msg(F.recs[1].tid == c->args.tid && F.recs[2].tid == late.d->args.tid,
		      "sent tid %llu then %llu: the waiting create is tid %llu", (unsigned long long)F.recs[1].tid,
		      (unsigned long long)F.recs[2].tid, (unsigned long long)c->args.tid);
	ck_assert_msg(F.caps_nrec >= 2, "the flush reached the MDS after %d request(s), before the waiting create",
		      F.caps_nrec);
	pthread_mutex_unlock(&F.lock);
	mdsc_request_put(a);
	mdsc_request_put(c);
	mdsc_request_put(late.d);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_reconnect_rejected)
{
	/* The MDS forgot the session: a new one is opened.  Nothing sent on the
	 * lost session may run twice: the UNSAFE-only create fails its wait for
	 * SAFE with EIO, the unanswered create B (sent, maybe executed) fails
	 * with EIO and is not sent again; only the unanswered read G is
	 * re-driven, with RETRY, on the new session (client_reconnect_stale:
	 * without it the client stays out, test_evicted_stays_out). */
	struct mds_client *m;
	struct mds_request *a, *b, *g;
	struct bg bb, bg_;

	set_opt("client_reconnect_stale", "true");
	m = new_client();
	a = mkreq(m, MDSP_OP_CREATE, "a");
	b = mkreq(m, MDSP_OP_CREATE, "b");
	g = mkreq(m, MDSP_OP_GETATTR, NULL);

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	fake_set(RM_NONE);
	bg_start(&bb, m, b, 0);
	wait_recs(2);
	bg_start(&bg_, m, g, 0);
	wait_recs(3);
	pthread_mutex_lock(&F.lock);
	F.reject_reconnect = true;
	F.mode = RM_SAFE;
	F.drop = true;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(bg_join(&bb), -EIO);
	ck_assert_int_eq(bg_join(&bg_), 0);
	ck_assert_int_eq(mdsc_wait_safe(m, a), -EIO);
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_uint_eq(perf_hist_count("sent_lost"), 1);
	ck_assert_uint_eq(perf_hist_count("unsafe_lost"), 1);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 1);
	ck_assert_int_eq(F.nopen, 2);
	ck_assert_int_eq(F.nrec, 4);
	ck_assert_uint_eq(F.recs[3].tid, g->args.tid);
	ck_assert_uint_eq(F.recs[3].flags, MDSP_REQ_RETRY);
	ck_assert_int_eq(F.recs[3].conn, 3);   /* 2 was the refused RECONNECT */
	pthread_mutex_unlock(&F.lock);
	ck_assert_uint_eq(mdsc_oldest_tid(m), g->args.tid + 1);
	mdsc_request_put(a);
	mdsc_request_put(b);
	mdsc_request_put(g);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_open_refused_is_bounded)
{
	struct mds_client *m;
	uint16_t port;
	int fd = listen_any(&port);
	char addr[64];
	uint64_t t0;

	close(fd);                      /* nothing listens there now */
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	/* an open that ignored its own bound would retry until the hang bound */
	set_opt("client_connect_timeout", "3600");
	ck_assert_int_eq(mdsc_create(addr, NULL, NULL, NULL, &m), 0);
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_open_session(m, 800), -ECONNREFUSED);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());
	mdsc_destroy(m);                /* returns: check's timeout catches a hang */
}
END_TEST

START_TEST(test_open_silent_is_bounded)
{
	/* something accepts connections but never answers the session open */
	struct mds_client *m;
	uint16_t port;
	int fd = listen_any(&port);
	char addr[64];
	uint64_t t0;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	/* the handshake's own bound is an hour: an open that waited for it
	 * instead of its 700 ms, or a teardown that did, would be a hang */
	set_opt("client_connect_timeout", "3600");
	ck_assert_int_eq(mdsc_create(addr, NULL, NULL, NULL, &m), 0);
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_open_session(m, 700), -ETIMEDOUT);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());
	/* the handshake still waiting is cut short by the teardown */
	t0 = now_mono_ns();
	mdsc_destroy(m);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());
	close(fd);
}
END_TEST

START_TEST(test_request_timeout)
{
	struct mds_client *m = new_client();
	struct mds_request *r = mkreq(m, MDSP_OP_GETATTR, NULL);
	uint64_t t0;

	set_opt("client_request_timeout", "0.3");
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_NONE);
	/* the fake never answers: without the timeout this is a hang */
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_do_request(m, r), -ETIMEDOUT);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());
	ck_assert_uint_eq(mdsc_oldest_tid(m), r->args.tid + 1);   /* given up: unregistered */
	mdsc_request_put(r);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_lazy_connect_and_perf)
{
	/* no mdsc_open_session(): the first request brings the session up */
	struct mds_client *m = new_client();
	struct mds_request *r = mkreq(m, MDSP_OP_LOOKUP, "x");
	struct json_object *d, *g, *v;

	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	mdsc_request_put(r);
	d = perf_dump_json();
	ck_assert(json_object_object_get_ex(d, "mds_client", &g));
	ck_assert(json_object_object_get_ex(g, "requests_sent", &v));
	ck_assert_int_eq(json_object_get_int64(v), 1);
	ck_assert(json_object_object_get_ex(g, "hold_replay", &v));
	json_object_put(d);
	mdsc_destroy(m);
}
END_TEST


START_TEST(test_evicted)
{
	/* EVICTED with client_reconnect_stale: a new session; the UNSAFE-only
	 * request fails its SAFE wait with EIO, the unanswered mkdir (sent: it
	 * may have run) fails with EIO and is not sent again, the unanswered
	 * lookup is re-driven */
	struct mds_client *m;
	struct mds_request *a, *b, *l;
	struct bg bb, bl;

	set_opt("client_reconnect_stale", "true");
	m = new_client();
	a = mkreq(m, MDSP_OP_CREATE, "a");
	b = mkreq(m, MDSP_OP_MKDIR, "b");
	l = mkreq(m, MDSP_OP_LOOKUP, "l");

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	fake_set(RM_NONE);
	bg_start(&bb, m, b, 0);
	wait_recs(2);
	bg_start(&bl, m, l, 0);
	wait_recs(3);
	pthread_mutex_lock(&F.lock);
	F.mode = RM_SAFE;
	F.evict = true;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(bg_join(&bb), -EIO);
	ck_assert_int_eq(bg_join(&bl), 0);
	ck_assert_int_eq(mdsc_wait_safe(m, a), -EIO);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nopen, 2);
	ck_assert_int_eq(F.nreconnect, 0);
	ck_assert_int_eq(F.nrec, 4);
	ck_assert_uint_eq(F.recs[3].tid, l->args.tid);
	ck_assert_uint_eq(F.recs[3].flags, MDSP_REQ_RETRY);
	pthread_mutex_unlock(&F.lock);
	mdsc_request_put(a);
	mdsc_request_put(b);
	mdsc_request_put(l);
	mdsc_destroy(m);
}
END_TEST

/*
 * A reply that says the MDS has no session on this connection (ENOTCONN:
 * the session went, or moved to another connection) is not the request's
 * result: the client resumes its session as after a broken connection and
 * sends the request again.  It used to hand ENOTCONN to the caller.
 */
START_TEST(test_no_session_reply_resends)
{
	struct mds_client *m = new_client();
	struct mds_request *l = mkreq(m, MDSP_OP_LOOKUP, "l");
	struct mds_request *k = mkreq(m, MDSP_OP_SETLK, NULL);

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.enotconn = 1;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(mdsc_do_request(m, l), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nrec, 2);
	ck_assert_uint_eq(F.recs[0].tid, l->args.tid);
	ck_assert_uint_eq(F.recs[1].tid, l->args.tid);
	ck_assert_int_ne(F.recs[1].conn, F.recs[0].conn);
	ck_assert_int_eq(F.nreconnect, 1);      /* resumed, not a new session */
	ck_assert_int_eq(F.nopen, 1);
	/* a file lock's answer too */
	F.enotconn = 1;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(mdsc_do_request(m, k), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nrec, 4);
	ck_assert_int_eq(F.nreconnect, 2);
	pthread_mutex_unlock(&F.lock);
	ck_assert(!mdsc_evicted(m, NULL, 0));
	ck_assert_uint_eq(perf_hist_field("no_session_answers", "value"), 2);
	mdsc_request_put(l);
	mdsc_request_put(k);
	mdsc_destroy(m);
}
END_TEST

static int fake_nreconnect(void)
{
	int n;

	pthread_mutex_lock(&F.lock);
	n = F.nreconnect;
	pthread_mutex_unlock(&F.lock);
	return n;
}

/* A session REJECT with ENOTCONN (the MDS's answer to a RENEW or a caps
 * message on a connection without a session) is not an eviction: the
 * client resumes its session.  It used to take it for one (EIO for good). */
START_TEST(test_no_session_reject_resumes)
{
	struct mds_client *m = new_client();
	struct mds_request *l = mkreq(m, MDSP_OP_LOOKUP, "l");

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.reject_nosession = true;
	pthread_mutex_unlock(&F.lock);
	LT_WAIT_UNTIL(fake_nreconnect() == 1 && mdsc_is_open(m), "the client did not resume its session");
	ck_assert(!mdsc_evicted(m, NULL, 0));
	ck_assert_int_eq(mdsc_do_request(m, l), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nopen, 1);
	pthread_mutex_unlock(&F.lock);
	mdsc_request_put(l);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_evicted_stays_out)
{
	/* EVICTED (the default, no client_reconnect_stale): no new session;
	 * everything in flight and everything after fails with EIO at once,
	 * and mdsc_evicted says why */
	struct mds_client *m = new_client();
	struct mds_request *b = mkreq(m, MDSP_OP_MKDIR, "b"), *l = mkreq(m, MDSP_OP_LOOKUP, "l");
	struct mds_request *n = mkreq(m, MDSP_OP_GETATTR, NULL);
	struct bg bb, bl;
	char why[256];

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	ck_assert(!mdsc_evicted(m, NULL, 0));
	fake_set(RM_NONE);
	bg_start(&bb, m, b, 0);
	wait_recs(1);
	bg_start(&bl, m, l, 0);
	wait_recs(2);
	pthread_mutex_lock(&F.lock);
	F.mode = RM_SAFE;
	F.evict = true;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(bg_join(&bb), -EIO);
	ck_assert_int_eq(bg_join(&bl), -EIO);
	ck_assert(mdsc_evicted(m, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "evicted by the admin"));
	/* refused here, at once: never sent, no session attempted for it */
	ck_assert_int_eq(mdsc_do_request(m, n), -EIO);
	/* deliberate: let time pass (reconnect backoff is 20-100 ms here) to
	 * show that no reopen or reconnect follows the eviction */
	usleep(300000);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nrec, 2);
	ck_assert_int_eq(F.nopen, 1);
	ck_assert_int_eq(F.nreconnect, 0);
	pthread_mutex_unlock(&F.lock);
	ck_assert(!mdsc_is_open(m));
	mdsc_request_put(b);
	mdsc_request_put(l);
	mdsc_request_put(n);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_addrs_parse)
{
	/* client_mds_addr: one address or a list; every entry checked, the bad one named */
	static const struct { const char *in; uint32_t n; const char *bad; } cases[] = {
		{ "127.0.0.1:6800", 1, NULL },
		{ "a:1,b:2, c:3 ", 3, NULL },
		{ "[::1]:6800,127.0.0.1:6801", 2, NULL },
		{ "mds.example:65535", 1, NULL },
		{ "", 0, "empty" },
		{ "127.0.0.1", 0, "entry 1 '127.0.0.1'" },
		{ "a:1,,b:2", 0, "entry 2 ''" },
		{ "a:1,b:2,", 0, "entry 3 ''" },
		{ "a:1,b:x1", 0, "entry 2 'b:x1'" },
		{ "a:1,b:0", 0, "entry 2 'b:0'" },
		{ "a:1,b:65536", 0, "entry 2 'b:65536'" },
		{ "a:1,:2", 0, "entry 2 ':2'" },
		{ "a:1,b:", 0, "entry 2 'b:'" },
		{ "::1:6800", 0, "brackets" },
		{ "a:1,b:2,a:1", 0, "entry 3 'a:1': listed twice" },
	};
	char err[512], **v;
	uint32_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = mdsc_addrs_parse(cases[i].in, &v, &n, err, sizeof(err));

		if (!cases[i].bad) {
			ck_assert_msg(r == 0, "'%s' refused: %s", cases[i].in, err);
			ck_assert_uint_eq(n, cases[i].n);
			mdsc_addrs_free(v, n);
		} else {
			ck_assert_msg(r == -EINVAL, "'%s' accepted", cases[i].in);
			ck_assert_msg(strstr(err, cases[i].bad), "'%s': the message '%s' does not say '%s'",
				      cases[i].in, err, cases[i].bad);
		}
	}
	ck_assert_int_eq(mdsc_addrs_parse("a:1, b:2", NULL, NULL, NULL, 0), 0);
	{
		struct mds_client *m;

		ck_assert_int_eq(mdsc_create("127.0.0.1:1,nohost", "client.test", NULL, NULL, &m), -EINVAL);
	}
}
END_TEST

/* the client's mds_sessions entry: @key's string */
static bool session_str_is(struct mds_client *m, const char *key, const char *want)
{
	struct json_object *o = mdsc_session_json(m), *v;
	bool ok = o && json_object_object_get_ex(o, key, &v) && !strcmp(json_object_get_string(v), want);

	json_object_put(o);
	return ok;
}

START_TEST(test_addr_list_round)
{
	/* a dead first address: the next is tried at once, not after a backoff
	 * (one of 60 s here, which the open would not survive) */
	struct mds_client *m;
	struct mds_request *r;
	char list[128], addr[64];
	uint16_t dead;
	int fd = listen_any(&dead);

	close(fd);
	set_opt("client_reconnect_backoff_min", "60");
	set_opt("client_reconnect_backoff_max", "60");
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", F.port);
	snprintf(list, sizeof(list), "127.0.0.1:%u,%s", dead, addr);
	ck_assert_int_eq(mdsc_create(list, "client.test", NULL, NULL, &m), 0);
	ck_assert_int_eq(mdsc_open_session(m, 10000), 0);
	ck_assert(session_str_is(m, "mds", addr));
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	mdsc_request_put(r);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_probe_silent_mds)
{
	/* The MDS in use goes silent with its socket open (a deposed MDS,
	 * SIGSTOPped).  client_session_timeout is far away; the probe finds
	 * the second address answering (a listener that answers the HELLO,
	 * standing for the new active) and the client goes there. */
	struct mds_client *m;
	struct mds_request *r;
	struct json_object *o, *v;
	struct answerer ans;
	char list[128], addr[64], other[64];
	uint16_t lport;
	int lfd = listen_any(&lport);

	answerer_start(&ans, lfd);

	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "300");
	set_opt("client_mds_probe_after", "0.2");
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", F.port);
	snprintf(other, sizeof(other), "127.0.0.1:%u", lport);
	snprintf(list, sizeof(list), "%s,%s", addr, other);
	ck_assert_int_eq(mdsc_create(list, "client.test", NULL, NULL, &m), 0);
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	ck_assert(session_str_is(m, "mds", addr));
	pthread_mutex_lock(&F.lock);
	F.mute = true;
	pthread_mutex_unlock(&F.lock);
	LT_WAIT_UNTIL(!mdsc_is_open(m) && session_str_is(m, "mds", other),
		      "the client did not leave the silent mds for the one that accepts");
	o = mdsc_session_json(m);
	ck_assert(json_object_object_get_ex(o, "probe_moves", &v) && json_object_get_int64(v) == 1);
	json_object_put(o);
	/* the stand-in goes away, the first MDS answers again: the round comes
	 * back to it and the session is resumed */
	pthread_mutex_lock(&F.lock);
	F.mute = false;
	pthread_mutex_unlock(&F.lock);
	answerer_stop(&ans);
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	mdsc_request_put(r);
	ck_assert(session_str_is(m, "mds", addr));
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 1);
	pthread_mutex_unlock(&F.lock);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_probe_skips_a_silent_listener)
{
	/* The MDS in use is slow to answer (muted for a while); the other
	 * address is a deposed MDS still stopped: its socket accepts connects
	 * into the backlog but nothing answers.  The probe must not take it
	 * for the new active (that cost a client_connect_timeout on a silent
	 * handshake and a move back): the session stays where it is and goes
	 * on once the MDS answers again. */
	struct mds_client *m;
	struct mds_request *r;
	struct json_object *o, *v;
	char list[128], addr[64], other[64];
	uint16_t lport;
	int lfd = listen_any(&lport);       /* never accepted, never answers */
	int64_t probes = 0, moves = -1;

	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "300");
	set_opt("client_mds_probe_after", "0.2");
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", F.port);
	snprintf(other, sizeof(other), "127.0.0.1:%u", lport);
	snprintf(list, sizeof(list), "%s,%s", addr, other);
	ck_assert_int_eq(mdsc_create(list, "client.test", NULL, NULL, &m), 0);
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.mute = true;
	pthread_mutex_unlock(&F.lock);
	/* two probes made (the event waited for), and neither moved */
	LT_WAIT_UNTIL(({
			      o = mdsc_session_json(m);
			      if (json_object_object_get_ex(o, "probes", &v))
				      probes = json_object_get_int64(v);
			      if (json_object_object_get_ex(o, "probe_moves", &v))
				      moves = json_object_get_int64(v);
			      json_object_put(o);
			      probes >= 2 || moves != 0;
		      }),
		      "the client made no probe of the other address");
	ck_assert_msg(moves == 0, "the client left its MDS for a stopped one that only accepts connects");
	ck_assert(session_str_is(m, "mds", addr));
	ck_assert(mdsc_is_open(m));
	pthread_mutex_lock(&F.lock);
	F.mute = false;
	pthread_mutex_unlock(&F.lock);
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	mdsc_request_put(r);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 0);
	pthread_mutex_unlock(&F.lock);
	mdsc_destroy(m);
	close(lfd);
}
END_TEST

START_TEST(test_probe_needs_two_addresses)
{
	/* with one address a silent MDS is judged by client_session_timeout
	 * alone: nothing is probed, the connection stays */
	struct mds_client *m;

	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "300");
	set_opt("client_mds_probe_after", "0.1");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.mute = true;
	pthread_mutex_unlock(&F.lock);
	/* letting time pass on purpose, to show that nothing happens: ten
	 * times client_mds_probe_after */
	usleep(1000000);
	ck_assert(mdsc_is_open(m));
	pthread_mutex_lock(&F.lock);
	F.mute = false;
	pthread_mutex_unlock(&F.lock);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_hung_mds_detected)
{
	/* an MDS that stops answering without closing the socket: the renew goes
	 * unanswered, the connection is declared dead, the session resumed */
	struct mds_client *m;
	struct mds_request *r;
	uint64_t end;

	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "0.4");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.mute = true;
	pthread_mutex_unlock(&F.lock);
	end = now_mono_ns() + 3000000000ull;
	while (mdsc_is_open(m) && now_mono_ns() < end)
		usleep(10000);
	ck_assert(!mdsc_is_open(m));
	pthread_mutex_lock(&F.lock);
	F.mute = false;
	pthread_mutex_unlock(&F.lock);
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, r), 0);
	mdsc_request_put(r);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 1);
	ck_assert_int_ge(F.nrenew, 1);
	pthread_mutex_unlock(&F.lock);
	mdsc_destroy(m);
}
END_TEST

struct xw {
	struct mds_client *m;
	int ret;
	pthread_t t;
};

static void *xattr_main(void *arg)
{
	struct xw *w = arg;
	struct mds_request *r = mkreq(w->m, MDSP_OP_SETXATTR, "user.big");

	r->args.data_len = MDSP_XATTR_SIZE_MAX;
	r->args.data = calloc(1, MDSP_XATTR_SIZE_MAX);
	w->ret = mdsc_do_request(w->m, r);
	mdsc_request_put(r);
	return NULL;
}

#define XW_THREADS 48

START_TEST(test_stalled_send_detected)
{
	/* An MDS that stops reading (SIGSTOP, a partition without RST) while
	 * requests with big payloads are sent: the socket buffers fill, a sender
	 * blocks in send() holding the connection's send_lock.  The session
	 * thread must not block behind it: the stall is noticed within
	 * client_session_timeout (plus slack), the session is resumed once the
	 * MDS reads again, and every request completes. */
	struct xw w[XW_THREADS];
	struct mds_client *m;
	uint64_t t0, took;
	int small = 4096;

	/* small receive buffers on the fake's side, so that 3 MiB fill the pipe */
	setsockopt(F.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "0.5");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	pthread_mutex_lock(&F.lock);
	F.mute = true;
	pthread_mutex_unlock(&F.lock);
	t0 = now_mono_ns();
	for (int i = 0; i < XW_THREADS; i++) {
		w[i] = (struct xw){ .m = m };
		pthread_create(&w[i].t, NULL, xattr_main, &w[i]);
	}
	/* a session thread blocked behind the stuck sender would never
	 * notice: wait_not_open fails on that hang */
	wait_not_open(m);
	took = now_mono_ns() - t0;
	fprintf(stderr, "stalled send: connection declared dead after %.0f ms (timeout 500 ms)\n",
		(double)took / 1e6);
	pthread_mutex_lock(&F.lock);
	F.mute = false;
	pthread_mutex_unlock(&F.lock);
	for (int i = 0; i < XW_THREADS; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_int_eq(w[i].ret, 0);
	}
	ck_assert(mdsc_is_open(m));
	ck_assert_int_eq(mdsc_sync(m), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_ge(F.nreconnect, 1);
	pthread_mutex_unlock(&F.lock);
	mdsc_destroy(m);
}
END_TEST

static void fake_mute(bool on)
{
	pthread_mutex_lock(&F.lock);
	F.mute = on;
	pthread_mutex_unlock(&F.lock);
}

/* a gauge or counter of perf group mds_client */
static uint64_t perf_gauge(const char *name)
{
	return perf_hist_field(name, "");
}

static int backpressure_writers(void);

START_TEST(test_stalled_socket_blocks_no_submitter)
{
	/*
	 * An MDS that stops reading while big requests fill the socket: one
	 * writer is stuck on it, nobody else.  Caps messages (documented never
	 * to block) go out at once, a small request is bounded by its own
	 * client_request_timeout instead of queueing behind the stuck write,
	 * and once the socket is declared dead (client_session_timeout) and the
	 * MDS reads again, the session comes back and everything completes.
	 */
	struct mdsp_caps caps = { .op = MDSP_CAPS_FLUSH, .ino = 0x1000 };
	int nw = backpressure_writers();
	struct xw *w = calloc((size_t)nw, sizeof(*w));
	struct mds_client *m;
	struct mds_request *r;
	uint64_t t0, took, worst = 0, end, sent;
	int small = 4096, i, ret;

	setsockopt(F.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	set_opt("client_session_renew_interval", "0.2");
	/* the muted MDS is declared dead only once the queue is checked
	 * (lowered to 3 s below), not while slow writers still fill it */
	set_opt("client_session_timeout", "60");
	set_opt("client_request_timeout", "0");
	set_opt("client_mds_send_queue", "16M");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_mute(true);
	t0 = now_mono_ns();
	sent = perf_hist_field("requests_sent", "");
	for (i = 0; i < nw; i++) {
		w[i] = (struct xw){ .m = m };
		pthread_create(&w[i].t, NULL, xattr_main, &w[i]);
	}
	/*
	 * The socket is full and the rest waits in the queue: more writers
	 * than the largest send buffer TCP may give the socket holds, and none
	 * with a timeout of its own that could empty it meanwhile.  Checked
	 * once every writer has sent: before that, the growing send buffer
	 * may still take what is queued (48 writers once, and under ASan on a
	 * loaded CI run the first 128 KiB of 144, so the check read 0).
	 */
	for (end = now_mono_ns() + 30000000000ull;
	     (perf_hist_field("requests_sent", "") < sent + (uint64_t)nw ||
	      perf_gauge("send_queue_bytes") < (128u << 10)) && now_mono_ns() < end;)
		usleep(2000);
	fprintf(stderr, "stalled socket: %d writers filled the queue in %.0f ms\n", nw,
		(double)(now_mono_ns() - t0) / 1e6);
	ck_assert_msg(mdsc_is_open(m), "the session ended while the writers filled the queue");
	ck_assert_uint_ge(perf_gauge("send_queue_bytes"), 128u << 10);
	set_opt("client_request_timeout", "0.5");
	for (i = 0; i < 20; i++) {
		t0 = now_mono_ns();
		ck_assert_int_eq(mdsc_send_caps(m, &caps), 0);
		took = now_mono_ns() - t0;
		worst = took > worst ? took : worst;
	}
	fprintf(stderr, "stalled socket: mdsc_send_caps took at most %.3f ms\n", (double)worst / 1e6);
	ck_assert_uint_lt(worst, 100000000ull);
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_do_request(m, r), -ETIMEDOUT);
	took = now_mono_ns() - t0;
	fprintf(stderr, "stalled socket: a small request gave up after %.0f ms (client_request_timeout 500 ms)\n",
		(double)took / 1e6);
	ck_assert_uint_lt(took, 1500000000ull);
	mdsc_request_put(r);
	/* the stall ends the connection within client_session_timeout */
	set_opt("client_session_timeout", "3");
	wait_not_open(m);
	fake_mute(false);
	for (i = 0; i < nw; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_msg(w[i].ret == 0 || w[i].ret == -ETIMEDOUT, "writer %d: %d", i, w[i].ret);
	}
	set_opt("client_request_timeout", "0");
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	ret = mdsc_do_request(m, r);
	ck_assert_int_eq(ret, 0);
	mdsc_request_put(r);
	ck_assert(mdsc_is_open(m));
	mdsc_destroy(m);
	free(w);
}
END_TEST

/*
 * Writers of MDSP_XATTR_SIZE_MAX each for the send-queue tests: enough
 * for twice the largest send buffer TCP autotuning may give the client's socket
 * (the third field of net.ipv4.tcp_wmem), plus 16.
 */
static int backpressure_writers(void)
{
	long wmem_max = 4l << 20;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");

	if (f) {
		long lo, def, max;

		if (fscanf(f, "%ld %ld %ld", &lo, &def, &max) == 3 && max > 0)
			wmem_max = max;
		fclose(f);
	}
	if (wmem_max > 64l << 20)
		wmem_max = 64l << 20;
	return (int)(2 * wmem_max / MDSP_XATTR_SIZE_MAX) + 16;
}

START_TEST(test_send_queue_backpressure)
{
	/*
	 * The out queue is bounded: against a socket that takes nothing, it
	 * holds at most client_mds_send_queue (plus the one frame that may
	 * exceed it), and the submitters beyond wait for room instead of
	 * growing it; after the failover they all complete.
	 */
	struct xw *w;
	struct mds_client *m;
	uint64_t end, peak = 0, q;
	int small = 4096, i, n;
	bool waited = false;

	/*
	 * More bytes than the client's socket can ever take (tcp_wmem's
	 * autotuning limit), so that the out queue, not the kernel, has to
	 * hold the rest: with 48 writers (3 MiB) a 4 MiB send buffer took
	 * nearly all of it and no submitter ever waited, 1 run in 4.
	 */
	n = backpressure_writers();
	w = calloc(n, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	setsockopt(F.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	/* the muted MDS is declared dead only once the test has seen the
	 * submitters wait (client_session_timeout lowered below): with 1 s from
	 * the start, under load (ASan, load 20) the connection died before the
	 * threads had filled the socket and the queue, and nobody ever waited */
	set_opt("client_session_renew_interval", "0.1");
	set_opt("client_session_timeout", "60");
	set_opt("client_mds_send_queue", "256K");
	m = new_client();
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_mute(true);
	for (i = 0; i < n; i++) {
		w[i] = (struct xw){ .m = m };
		ck_assert_int_eq(pthread_create(&w[i].t, NULL, xattr_main, &w[i]), 0);
	}
	/* sampled for 200 ms more once a submitter waits: at the sample that
	 * saw the first waiter, the writer may just have taken everything
	 * queued into its writev (peak 0 under load 20, once) */
	for (end = now_mono_ns() + 30000000000ull; now_mono_ns() < end && mdsc_is_open(m);) {
		if (!waited && perf_gauge("send_waiters") > 0) {
			waited = true;
			end = now_mono_ns() + 200000000ull;
		}
		q = perf_gauge("send_queue_bytes");
		peak = q > peak ? q : peak;
		usleep(1000);
	}
	fprintf(stderr, "backpressure: out queue peaked at %llu bytes (bound 256 KiB + a frame)\n",
		(unsigned long long)peak);
	ck_assert_msg(waited, "no submitter waited for room in 30 s (%d writers of 64 KiB, queue peak %llu)", n,
		      (unsigned long long)peak);
	ck_assert_uint_gt(peak, 128u << 10);
	ck_assert_uint_le(peak, (256u << 10) + MDSP_XATTR_SIZE_MAX + 4096);
	set_opt("client_session_timeout", "1");
	wait_not_open(m);
	fake_mute(false);
	for (i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_int_eq(w[i].ret, 0);
	}
	free(w);
	ck_assert_uint_gt(perf_hist_count("send_wait"), 0);
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_uint_eq(perf_gauge("send_queue_bytes"), 0);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_waiting_request_times_out)
{
	/* no MDS at all: a request parked on the wait list is bounded by
	 * client_request_timeout and leaves the list and the map */
	struct mds_client *m;
	struct mds_request *r;
	uint16_t port;
	int fd = listen_any(&port);
	char addr[64];
	uint64_t t0;

	close(fd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	set_opt("client_request_timeout", "0.3");
	ck_assert_int_eq(mdsc_create(addr, NULL, NULL, NULL, &m), 0);
	r = mkreq(m, MDSP_OP_GETATTR, NULL);
	/* nothing listens: without client_request_timeout this is a hang */
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_do_request(m, r), -ETIMEDOUT);
	ck_assert_uint_lt(now_mono_ns() - t0, lt_hang_ns());
	ck_assert_uint_eq(mdsc_oldest_tid(m), r->args.tid + 1);
	mdsc_request_put(r);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_safe_reply_ahead_of_open)
{
	/* the MDS journaled A while the connection was down and sends its SAFE
	 * reply on the new connection before the OPEN: it is taken, so A is not
	 * replayed */
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_CREATE, "a");

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);
	pthread_mutex_lock(&F.lock);
	F.safe_before_open = true;
	F.mode = RM_SAFE;
	F.drop = true;
	pthread_mutex_unlock(&F.lock);
	ck_assert_int_eq(mdsc_wait_safe(m, a), 0);
	ck_assert_int_eq(mdsc_sync(m), 0);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_eq(F.nreconnect, 1);
	ck_assert_int_eq(F.nrec, 1);            /* no REPLAY of A */
	pthread_mutex_unlock(&F.lock);
	mdsc_request_put(a);
	mdsc_destroy(m);
}
END_TEST

static void *dropper(void *arg)
{
	for (int i = 0; i < 6; i++) {
		usleep(80000);
		fake_drop(0);
	}
	return NULL;
}

START_TEST(test_reconnect_storm)
{
	/* connections dropped six times under 8 busy threads: every request
	 * completes, each tid is sent fresh at most once (the rest are REPLAY or
	 * RETRY), and oldest_tid never runs ahead of a tid the MDS has only
	 * answered UNSAFE */
	struct mds_client *m = new_client();
	struct worker w[8];
	pthread_t dt;
	int total = 0;
	uint8_t *fresh;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE_LAG);
	pthread_create(&dt, NULL, dropper, NULL);
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .m = m, .n = 150 };
		pthread_create(&w[i].t, NULL, worker_main, &w[i]);
	}
	pthread_join(dt, NULL);
	for (int i = 0; i < 8; i++) {
		pthread_join(w[i].t, NULL);
		ck_assert_int_eq(w[i].fails, 0);
		total += w[i].n;
	}
	fake_flush();
	ck_assert_int_eq(mdsc_sync(m), 0);
	ck_assert_uint_eq(mdsc_oldest_tid(m), (uint64_t)total + 1);
	/* (a drop may land on a handshake: not every drop is a resumed session) */
	ck_assert_uint_ge(perf_hist_count("reconnects"), 1);
	fprintf(stderr, "storm: %llu reconnects, %llu replays, %llu retries\n",
		(unsigned long long)perf_hist_count("reconnects"), (unsigned long long)perf_hist_count("replays"),
		(unsigned long long)perf_hist_count("retries"));
	fresh = calloc((size_t)total + 1, 1);
	pthread_mutex_lock(&F.lock);
	ck_assert_int_ge(F.nconn, 4);
	for (int i = 0; i < F.nrec; i++) {
		ck_assert_uint_le(F.recs[i].tid, (uint64_t)total);
		ck_assert_uint_le(F.recs[i].oldest, F.recs[i].tid);
		ck_assert_uint_le(F.recs[i].oldest, F.recs[i].min_unsafe);
		if (F.recs[i].flags == 0)
			ck_assert_int_eq(fresh[F.recs[i].tid]++, 0);
		else
			ck_assert_uint_gt(F.recs[i].attempt, 1);
	}
	pthread_mutex_unlock(&F.lock);
	free(fresh);
	mdsc_destroy(m);
}
END_TEST

START_TEST(test_asok_commands)
{
	/* mds_requests lists the request that got only an UNSAFE reply;
	 * mds_sessions shows the open session */
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_MKDIR, "d");
	struct json_object *req, *rep, *arr, *e, *v;
	struct asok *as;
	char path[128];

	snprintf(path, sizeof(path), "/tmp/test_mdsc.%d.asok", (int)getpid());
	ck_assert_int_eq(asok_start(path, &as), 0);
	ck_assert_int_eq(mdsc_register_asok(m, as), 0);
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);

	req = json_tokener_parse("{\"prefix\": \"mds_requests\"}");
	ck_assert_int_eq(asok_request(path, req, &rep, 2000), 0);
	ck_assert(json_object_object_get_ex(rep, "requests", &arr));
	ck_assert_int_eq(json_object_array_length(arr), 1);
	e = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(e, "tid", &v));
	ck_assert_uint_eq((uint64_t)json_object_get_int64(v), a->args.tid);
	ck_assert(json_object_object_get_ex(e, "op", &v));
	ck_assert_str_eq(json_object_get_string(v), "mkdir");
	ck_assert(json_object_object_get_ex(e, "got_unsafe", &v));
	ck_assert(json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(e, "attempt", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert(json_object_object_get_ex(e, "age_ms", &v));
	json_object_put(req);
	json_object_put(rep);

	req = json_tokener_parse("{\"prefix\": \"mds_sessions\"}");
	ck_assert_int_eq(asok_request(path, req, &rep, 2000), 0);
	ck_assert_int_eq(json_object_array_length(rep), 1);
	e = json_object_array_get_idx(rep, 0);
	ck_assert(json_object_object_get_ex(e, "state", &v));
	ck_assert_str_eq(json_object_get_string(v), "open");
	ck_assert(json_object_object_get_ex(e, "session_id", &v));
	ck_assert_uint_eq((uint64_t)json_object_get_int64(v), F.sid);
	ck_assert(json_object_object_get_ex(e, "last_renew_ack_age_ms", &v));
	json_object_put(req);
	json_object_put(rep);

	fake_flush();
	ck_assert_int_eq(mdsc_wait_safe(m, a), 0);
	asok_stop(as);
	mdsc_request_put(a);
	mdsc_destroy(m);
}
END_TEST

/* ---- the waiter's fast path (mds_client.c wait_fast) ------------------- */

static _Atomic int hook_calls;

/* Right before the waiter sleeps: let the SAFE reply arrive and be handled
 * first, so that its wake comes before the futex wait. */
static void flush_before_sleep(struct mdsc_req *r)
{
	if (atomic_fetch_add(&hook_calls, 1))
		return;
	fake_flush();
	LT_WAIT_UNTIL(atomic_load(&r->state) & RS_GOT_SAFE, "the SAFE reply was not handled");
}

/*
 * A reply that comes between the waiter's last look at the request's state
 * and its sleep must still end the wait (the futex word moved: the wait
 * returns at once).  A lost wake-up shows as a wait that lasts until
 * client_request_timeout (3 s here), not as a hang.
 */
START_TEST(test_reply_before_waiter_sleeps)
{
	struct mds_client *m = new_client();
	struct mds_request *a = mkreq(m, MDSP_OP_MKDIR, "a");
	uint64_t t0;

	set_opt("client_request_timeout", "3");
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	ck_assert_int_eq(mdsc_do_request(m, a), 0);     /* UNSAFE: the SAFE reply is still to come */
	atomic_store(&hook_calls, 0);
	mdsc_test_before_sleep = flush_before_sleep;
	t0 = now_mono_ns();
	ck_assert_int_eq(mdsc_wait_safe(m, a), 0);
	mdsc_test_before_sleep = NULL;
	ck_assert_int_ge(atomic_load(&hook_calls), 1);  /* the race window was taken */
	ck_assert_uint_lt(now_mono_ns() - t0, 2000000000ull);
	mdsc_request_put(a);
	mdsc_destroy(m);
}
END_TEST

static _Atomic int intr_armed, intr_disarmed;

static void intr_arm(struct lc_intr *it)
{
	(void)it;
	atomic_store(&intr_armed, 1);
}

static void intr_disarm(struct lc_intr *it)
{
	(void)it;
	atomic_store(&intr_disarmed, 1);
}

struct intr_bg {
	pthread_t t;
	struct mds_client *m;
	struct mds_request *req;
	struct lc_intr it;
	_Atomic int ready;
	int ret;
};

static void *intr_bg_main(void *arg)
{
	struct intr_bg *b = arg;

	lc_intr_begin(&b->it, intr_arm, intr_disarm, NULL);
	atomic_store(&b->ready, 1);
	b->ret = mdsc_do_request(b->m, b->req);
	lc_intr_end(&b->it);
	return NULL;
}

/*
 * An interruptible wait starts on the futex with no lock, then (past
 * LC_INTR_ARM_NS) arms the frontend's interrupt and goes on under the
 * request's lock, where the interrupt reaches it: EINTR, the request given
 * up.  The MDS never answers here.
 */
START_TEST(test_interrupted_request)
{
	struct mds_client *m = new_client();
	struct intr_bg b = { .m = m };

	set_opt("client_request_timeout", "0");
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_NONE);
	b.req = mkreq(m, MDSP_OP_GETATTR, NULL);
	atomic_store(&intr_armed, 0);
	atomic_store(&intr_disarmed, 0);
	pthread_create(&b.t, NULL, intr_bg_main, &b);
	LT_WAIT_UNTIL(atomic_load(&intr_armed), "the wait never armed its interrupt");
	lc_intr_fire(&b.it);
	pthread_join(b.t, NULL);
	ck_assert_int_eq(b.ret, -EINTR);
	ck_assert_int_eq(atomic_load(&intr_disarmed), 1);
	ck_assert_uint_eq(mdsc_oldest_tid(m), b.req->args.tid + 1);  /* given up: unregistered */
	mdsc_request_put(b.req);
	mdsc_destroy(m);
}
END_TEST

struct safe_bg {
	pthread_t t;
	struct mds_client *m;
	struct mds_request *req;
	_Atomic int done;
	int ret;
};

static void *safe_bg_main(void *arg)
{
	struct safe_bg *b = arg;

	b->ret = mdsc_wait_safe(b->m, b->req);
	atomic_store(&b->done, 1);
	return NULL;
}

static _Atomic int sleepers_seen;

static void count_sleep(struct mdsc_req *r)
{
	(void)r;
	atomic_fetch_add(&sleepers_seen, 1);
}

/*
 * A wait with no deadline and no interrupt sleeps on the futex for good
 * unless the unmount's bound wakes it: mdsc_shutdown_begin must.
 */
START_TEST(test_shutdown_wakes_fast_waiter)
{
	struct mds_client *m = new_client();
	struct safe_bg b = { .m = m };

	set_opt("client_request_timeout", "0");
	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_UNSAFE);
	b.req = mkreq(m, MDSP_OP_MKDIR, "a");
	ck_assert_int_eq(mdsc_do_request(m, b.req), 0);
	atomic_store(&sleepers_seen, 0);
	mdsc_test_before_sleep = count_sleep;
	pthread_create(&b.t, NULL, safe_bg_main, &b);
	LT_WAIT_UNTIL(atomic_load(&sleepers_seen) >= 1, "the waiter never went to sleep");
	mdsc_shutdown_begin(m, now_mono_ns() + 50000000ull);
	LT_WAIT_UNTIL(atomic_load(&b.done), "the shutdown's bound did not end the wait");
	pthread_join(b.t, NULL);
	mdsc_test_before_sleep = NULL;
	ck_assert_int_ne(b.ret, 0);
	fake_flush();
	mdsc_request_put(b.req);
	mdsc_destroy(m);
}
END_TEST

/* ---- corked requests (mds_client_conn.c, client_mds_cork_us) ----------- */

static _Atomic int corked_replies;

static void corked_reply(struct mds_request *req, void *arg)
{
	(void)req;
	(void)arg;
	atomic_fetch_add(&corked_replies, 1);
}

/*
 * Requests nobody waits for (on_reply) wait in the queue; the next request
 * somebody waits for sends them, in order, ahead of itself, at once (the
 * cork here is 30 s: a request held by it would fail the bounded waits).
 * With no other traffic, the cork's end sends them by itself.
 */
START_TEST(test_corked_requests)
{
	struct mds_client *m = new_client();
	struct mds_request *a[3], *sync, *late;
	uint64_t corked0;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_SAFE);
	set_opt("client_mds_cork_us", "30000000");
	atomic_store(&corked_replies, 0);
	corked0 = perf_hist_field("corked", "");
	for (int i = 0; i < 3; i++) {
		a[i] = mkreq(m, MDSP_OP_SETATTR, NULL);
		a[i]->on_reply = corked_reply;
		ck_assert_int_eq(mdsc_submit(m, a[i]), 0);
	}
	ck_assert_uint_eq(perf_hist_field("corked", "") - corked0, 3);
	sync = mkreq(m, MDSP_OP_GETATTR, NULL);
	ck_assert_int_eq(mdsc_do_request(m, sync), 0);
	LT_WAIT_UNTIL(atomic_load(&corked_replies) == 3, "%d of the 3 corked requests answered",
		      atomic_load(&corked_replies));
	pthread_mutex_lock(&F.lock);
	ck_assert_int_ge(F.nrec, 4);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(F.recs[F.nrec - 4 + i].tid, a[i]->args.tid);
	ck_assert_uint_eq(F.recs[F.nrec - 1].tid, sync->args.tid);
	pthread_mutex_unlock(&F.lock);

	/* alone: the writer sends it when the cork ends */
	set_opt("client_mds_cork_us", "20000");
	late = mkreq(m, MDSP_OP_SETATTR, NULL);
	late->on_reply = corked_reply;
	ck_assert_int_eq(mdsc_submit(m, late), 0);
	LT_WAIT_UNTIL(atomic_load(&corked_replies) == 4, "a corked request alone was never sent");
	set_opt("client_mds_cork_us", "0");
	for (int i = 0; i < 3; i++)
		mdsc_request_put(a[i]);
	mdsc_request_put(sync);
	mdsc_request_put(late);
	mdsc_destroy(m);
}
END_TEST

/*
 * Arming a cork needs a timer, and the writer thread keeps it: a writer
 * asleep until signalled is woken for it (cork_wakes).  After a cork it
 * naps for no longer than any later cork lasts, so the next corks cost no
 * wake-up: the second batch here must not wake it (the cork is 30 s; both
 * batches are sent by a request somebody waits for).
 */
START_TEST(test_cork_needs_no_writer_wakeup)
{
	struct mds_client *m = new_client();
	struct mds_request *a[4], *sync[2];
	uint64_t wakes;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	fake_set(RM_SAFE);
	set_opt("client_mds_cork_us", "30000000");
	atomic_store(&corked_replies, 0);
	for (int b = 0; b < 2; b++) {
		wakes = perf_hist_field("cork_wakes", "");
		for (int i = 2 * b; i < 2 * b + 2; i++) {
			a[i] = mkreq(m, MDSP_OP_SETATTR, NULL);
			a[i]->on_reply = corked_reply;
			ck_assert_int_eq(mdsc_submit(m, a[i]), 0);
		}
		if (b == 1)
			ck_assert_msg(perf_hist_field("cork_wakes", "") == wakes,
				      "a cork armed while the writer naps woke it (%llu wake-ups)",
				      (unsigned long long)(perf_hist_field("cork_wakes", "") - wakes));
		sync[b] = mkreq(m, MDSP_OP_GETATTR, NULL);
		ck_assert_int_eq(mdsc_do_request(m, sync[b]), 0);
		LT_WAIT_UNTIL(atomic_load(&corked_replies) == 2 * b + 2, "%d of the %d corked requests answered",
			      atomic_load(&corked_replies), 2 * b + 2);
	}
	set_opt("client_mds_cork_us", "0");
	for (int i = 0; i < 4; i++)
		mdsc_request_put(a[i]);
	mdsc_request_put(sync[0]);
	mdsc_request_put(sync[1]);
	mdsc_destroy(m);
}
END_TEST

static int fake_ncaps(void)
{
	int n;

	pthread_mutex_lock(&F.lock);
	n = F.ncaps;
	pthread_mutex_unlock(&F.lock);
	return n;
}

/*
 * A caps update nobody waits for (mdsc_send_caps_corked: the flusher's size
 * reports) waits in the cork like a request nobody waits for; whoever comes
 * to wait for it uncorks it (mdsc_uncork, as caps.c's flush_wait does), and
 * a caps message sent uncorked takes the queue along.
 */
START_TEST(test_corked_caps)
{
	struct mds_client *m = new_client();
	struct mdsp_caps caps = { .op = MDSP_CAPS_UPDATE, .ino = 0x10000000123ull };
	uint64_t corked0;
	int n0;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	set_opt("client_mds_cork_us", "30000000");
	n0 = fake_ncaps();
	corked0 = perf_hist_field("corked", "");
	ck_assert_int_eq(mdsc_send_caps_corked(m, &caps), 0);
	ck_assert_int_eq(mdsc_send_caps_corked(m, &caps), 0);
	ck_assert_uint_eq(perf_hist_field("corked", "") - corked0, 2);
	mdsc_uncork(m);
	LT_WAIT_UNTIL(fake_ncaps() == n0 + 2, "%d of the 2 corked caps messages arrived", fake_ncaps() - n0);

	ck_assert_int_eq(mdsc_send_caps_corked(m, &caps), 0);
	ck_assert_uint_eq(perf_hist_field("corked", "") - corked0, 3);
	ck_assert_int_eq(mdsc_send_caps(m, &caps), 0);
	LT_WAIT_UNTIL(fake_ncaps() == n0 + 4, "%d of the 2 caps messages arrived", fake_ncaps() - n0 - 2);
	set_opt("client_mds_cork_us", "0");
	mdsc_destroy(m);
}
END_TEST

static int fake_mute_seen(void)
{
	int n;

	pthread_mutex_lock(&F.lock);
	n = F.mute_seen;
	pthread_mutex_unlock(&F.lock);
	return n;
}

/*
 * Half-close our end of the session's connection (the MDS sees nothing: it
 * is muted), so that the next send() on it fails at once with EPIPE while
 * the reader still believes the connection alive -- what a send meets in
 * the moment between an MDS's kill -9 (its RST) and the reader's noticing.
 */
static uint64_t break_conn_send(struct mds_client *m)
{
	uint64_t gen;
	int seen;

	seen = fake_mute_seen();
	/* the fake is past any read it was in: it will not see our FIN */
	LT_WAIT_UNTIL(fake_mute_seen() > seen, "the fake MDS did not go mute");
	pthread_mutex_lock(&m->mutex);
	ck_assert_ptr_nonnull(m->session.conn);
	gen = m->session.conn->gen;
	ck_assert_int_eq(shutdown(m->session.conn->fd, SHUT_WR), 0);
	pthread_mutex_unlock(&m->mutex);
	return gen;
}

/* open again, on a connection newer than generation @gen */
static bool open_after(struct mds_client *m, uint64_t gen)
{
	bool ok;

	pthread_mutex_lock(&m->mutex);
	ok = m->session.state == SESS_OPEN && m->session.conn && m->session.conn->gen > gen;
	pthread_mutex_unlock(&m->mutex);
	return ok;
}

/*
 * A caps message whose send fails because the connection just broke
 * (EPIPE, ECONNRESET: the MDS was killed) is like one that found no
 * session: -ENOTCONN, which the callers wait out (lc_cap_flush_sync waits
 * for the session and sends again; lc_wb_report leaves the size dirty).
 * The raw errno used to come back, and fsync() on a mount returned
 * "Connection reset by peer" across an MDS restart.  Both ways a send
 * meets the socket itself: the direct send of an idle connection, and an
 * uncorked message taking the corked queue along.
 */
START_TEST(test_caps_send_on_broken_conn)
{
	struct mds_client *m = new_client();
	struct mdsp_caps caps = { .op = MDSP_CAPS_FLUSH, .ino = 0x10000000123ull, .flush_tid = 1 };
	uint64_t gen;
	int r;

	ck_assert_int_eq(mdsc_open_session(m, 2000), 0);
	set_opt("client_mds_cork_us", "30000000");
	for (int corked = 0; corked < 2; corked++) {
		fake_mute(true);
		if (corked)
			ck_assert_int_eq(mdsc_send_caps_corked(m, &caps), 0);
		gen = break_conn_send(m);
		r = mdsc_send_caps(m, &caps);
		ck_assert_msg(r == -ENOTCONN, "%s: a send on a broken connection returned %d (%s), not -ENOTCONN",
			      corked ? "after a corked message" : "idle connection", r, strerror(-r));
		fake_mute(false);
		LT_WAIT_UNTIL(open_after(m, gen), "the session did not come back");
		ck_assert_int_eq(mdsc_send_caps(m, &caps), 0);
	}
	set_opt("client_mds_cork_us", "0");
	mdsc_destroy(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mdsc");
	TCase *tc = tcase_create("fake_mds");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_frame_seq_patch);
	tcase_add_test(tc, test_unsafe_then_safe);
	tcase_add_test(tc, test_reply_handled_without_client_mutex);
	tcase_add_test(tc, test_concurrent_oldest_tid);
	tcase_add_test(tc, test_reconnect_replay_order);
	tcase_add_test(tc, test_new_request_after_waiting);
	tcase_add_test(tc, test_locking_before);
	tcase_add_test(tc, test_reconnect_rejected);
	tcase_add_test(tc, test_no_session_reply_resends);
	tcase_add_test(tc, test_no_session_reject_resumes);
	tcase_add_test(tc, test_open_refused_is_bounded);
	tcase_add_test(tc, test_open_silent_is_bounded);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_lazy_connect_and_perf);
	tcase_add_test(tc, test_asok_commands);
	tcase_add_test(tc, test_evicted);
	tcase_add_test(tc, test_evicted_stays_out);
	tcase_add_test(tc, test_reconnect_storm);
	tcase_add_test(tc, test_safe_reply_ahead_of_open);
	tcase_add_test(tc, test_hung_mds_detected);
	tcase_add_test(tc, test_addrs_parse);
	tcase_add_test(tc, test_addr_list_round);
	tcase_add_test(tc, test_probe_silent_mds);
	tcase_add_test(tc, test_probe_skips_a_silent_listener);
	tcase_add_test(tc, test_probe_needs_two_addresses);
	tcase_add_test(tc, test_waiting_request_times_out);
	tcase_add_test(tc, test_stalled_send_detected);
	tcase_add_test(tc, test_stalled_socket_blocks_no_submitter);
	tcase_add_test(tc, test_send_queue_backpressure);
	tcase_add_test(tc, test_reply_before_waiter_sleeps);
	tcase_add_test(tc, test_interrupted_request);
	tcase_add_test(tc, test_shutdown_wakes_fast_waiter);
	tcase_add_test(tc, test_corked_requests);
	tcase_add_test(tc, test_cork_needs_no_writer_wakeup);
	tcase_add_test(tc, test_corked_caps);
	tcase_add_test(tc, test_caps_send_on_broken_conn);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
