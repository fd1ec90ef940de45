/*
 * test_rpc.c - the RPC service over a real loopback socket: the NULL
 * procedure, multi-fragment records, pipelining, flow control at the
 * in-flight limit, RPC-level errors (PROG_UNAVAIL, PROG_MISMATCH,
 * PROC_UNAVAIL, GARBAGE_ARGS, RPC_MISMATCH, AUTH_ERROR), the DRC on the
 * wire, and bad input (garbage, an oversized record mark, a truncated
 * header) answered or closed while another connection keeps being served;
 * a client that never reads its replies (bounded queue, closed when stuck),
 * idle connections, accept out of file descriptors, and record buffers that
 * grow with the bytes that arrived, not with what the mark announced; what
 * one peer can hold: half-sent records (closed at their deadline), floods
 * of empty fragments (closed at the fragment limit) and idle connections
 * from one address (its own slot limit, below the global one).
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/rpc/drc.h"
#include "test_rpc_util.h"

#define TPROG 400100
#define MAX_RECORD (2 * 1024 * 1024)

static struct rpc_svc *svc;
static struct drc *drc;
static uint16_t port;
static _Atomic unsigned int counter;
static _Atomic int running, max_running;
static _Atomic bool port_ok = true;
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpc_xprt *cb_xprt;        /* protected by cb_lock: proc 6's connection */

static int tdispatch(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res)
{
	uint32_t v;
	int now;

	switch (req->call.proc) {
	case 1:         /* echo + 1 */
		if (xdr_get_u32(args, &v))
			return RPC_GARBAGE_ARGS;
		xdr_put_u32(res, v + 1);
		return RPC_SUCCESS;
	case 2: {       /* sleep v ms, return v */
		struct timespec ts;
		if (xdr_get_u32(args, &v))
			return RPC_GARBAGE_ARGS;
		now = atomic_fetch_add(&running, 1) + 1;
		if (now > atomic_load(&max_running))
			atomic_store(&max_running, now);
		ts.tv_sec = v / 1000;
		ts.tv_nsec = (long)(v % 1000) * 1000000L;
		nanosleep(&ts, NULL);
		atomic_fetch_sub(&running, 1);
		xdr_put_u32(res, v);
		return RPC_SUCCESS;
	}
	case 4: {       /* echo an opaque back */
		const uint8_t *p;
		uint32_t n;
		if (xdr_get_opaque(args, &p, &n, MAX_RECORD))
			return RPC_GARBAGE_ARGS;
		xdr_put_opaque(res, p, n);
		return RPC_SUCCESS;
	}
	case 5: {       /* reply with v zero bytes */
		static const uint8_t zeros[1 << 20];
		if (xdr_get_u32(args, &v) || v > sizeof(zeros))
			return RPC_GARBAGE_ARGS;
		xdr_put_opaque(res, zeros, v);
		return RPC_SUCCESS;
	}
	case 6:         /* remember this connection for a call back (back_channel_calls) */
		pthread_mutex_lock(&cb_lock);
		if (cb_xprt)
			rpc_xprt_put(cb_xprt);
		cb_xprt = rpc_xprt_get(req->xprt);
		pthread_mutex_unlock(&cb_lock);
		return RPC_SUCCESS;
	case 3:         /* non-idempotent: bump a counter */
		xdr_put_u32(res, atomic_fetch_add(&counter, 1) + 1);
		return RPC_SUCCESS;
	default:
		return RPC_PROC_UNAVAIL;
	}
}

static bool tcacheable(void *priv, const struct rpc_req *req)
{
	return req->call.proc == 3;
}

static bool tport_check(void *arg, const struct rpc_req *req)
{
	return port_ok;
}

static struct rpc_svc_params params(unsigned int inflight, unsigned int workers)
{
	struct rpc_svc_params p = {
		.max_record = MAX_RECORD, .max_inflight = inflight, .max_conns = 16,
		.workers = workers, .max_reply = MAX_RECORD + 4096,
	};
	return p;
}

static void start_p(const struct rpc_svc_params *p)
{
	struct drc_params dp = { .buckets = 64, .max_entries = 1000, .expiry_ns = 120000000000ull,
				 .csum_len = 256 };
	struct rpc_program prog = { .prog = TPROG, .vers_lo = 1, .vers_hi = 2, .name = "test",
				    .dispatch = tdispatch, .cacheable = tcacheable };

	ck_assert_int_eq(drc_create(&dp, &drc), 0);
	ck_assert_int_eq(rpc_svc_create(p, drc, &svc), 0);
	ck_assert_int_eq(rpc_svc_register(svc, &prog), 0);
	rpc_svc_set_port_check(svc, tport_check, NULL);
	ck_assert_int_eq(rpc_svc_start(svc, "127.0.0.1:0"), 0);
	port = rpc_svc_port(svc);
	ck_assert_uint_ne(port, 0);
}

static void start(unsigned int inflight, unsigned int workers)
{
	struct rpc_svc_params p = params(inflight, workers);

	start_p(&p);
}

static void setup(void)
{
	log_init("test_rpc");
	start(4, 2);
}

static void teardown(void)
{
	pthread_mutex_lock(&cb_lock);
	if (cb_xprt)
		rpc_xprt_put(cb_xprt);
	cb_xprt = NULL;
	pthread_mutex_unlock(&cb_lock);
	rpc_svc_destroy(svc);
	drc_destroy(drc);
	svc = NULL;
	drc = NULL;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait (up to 20 s: a loaded machine) until rpc_svc_conns() == @n. */
static bool wait_conns(unsigned int n)
{
	double end = mono_s() + 20;

	while (rpc_svc_conns(svc) != n) {
		if (mono_s() > end)
			return false;
		usleep(5 * 1000);
	}
	return true;
}

/* Make a call with one u32 argument; return the parsed reply. */
static int call(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, const uint32_t *arg,
		struct trpc_reply *r, uint8_t **keep)
{
	struct xdr_enc e;
	uint8_t *buf;
	size_t len;
	int err;

	xdr_enc_init(&e, 4096);
	trpc_call_header(&e, xid, prog, vers, proc);
	if (arg)
		xdr_put_u32(&e, *arg);
	err = trpc_send_record(fd, e.buf, e.len, 0);
	xdr_enc_free(&e);
	if (err)
		return err;
	buf = trpc_recv_record(fd, &len, &err);
	if (!buf)
		return err;
	err = trpc_parse_reply(buf, len, r);
	*keep = buf;
	return err;
}

/* A healthy connection: echo works. */
static void assert_served(void)
{
	int fd = trpc_connect(port);
	struct trpc_reply r;
	uint8_t *buf = NULL;
	uint32_t v = 41, out;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(call(fd, 99, TPROG, 1, 1, &v, &r, &buf), 0);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	ck_assert_int_eq(xdr_get_u32(&r.res, &out), 0);
	ck_assert_uint_eq(out, 42);
	free(buf);
	close(fd);
}

START_TEST(null_and_echo)
{
	int fd = trpc_connect(port);
	struct trpc_reply r;
	uint8_t *buf;
	uint32_t v = 7, out;

	ck_assert_int_eq(call(fd, 1, TPROG, 2, 0, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.xid, 1);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	ck_assert_uint_eq(xdr_dec_left(&r.res), 0);
	free(buf);
	ck_assert_int_eq(call(fd, 2, TPROG, 1, 1, &v, &r, &buf), 0);
	ck_assert_uint_eq(r.xid, 2);
	ck_assert_int_eq(xdr_get_u32(&r.res, &out), 0);
	ck_assert_uint_eq(out, 8);
	free(buf);
	close(fd);
}
END_TEST

START_TEST(fragments)
{
	int fd = trpc_connect(port);
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *buf;
	size_t len;
	uint32_t out;
	size_t i;

	xdr_enc_init(&e, 4096);
	trpc_call_header(&e, 5, TPROG, 1, 1);
	xdr_put_u32(&e, 100);
	/* 7-byte fragments */
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 7), 0);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &out), 0);
	ck_assert_uint_eq(out, 101);
	free(buf);
	/* and one byte per send(), record mark split too */
	{
		uint8_t mark[4];
		xdr_store_u32(mark, RPC_RM_LAST | (uint32_t)e.len);
		for (i = 0; i < 4; i++)
			ck_assert_int_eq(trpc_write_all(fd, mark + i, 1), 0);
		for (i = 0; i < e.len; i++)
			ck_assert_int_eq(trpc_write_all(fd, e.buf + i, 1), 0);
	}
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	free(buf);
	xdr_enc_free(&e);
	close(fd);
}
END_TEST

START_TEST(pipelined_and_inflight_limit)
{
	int fd = trpc_connect(port);
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *buf;
	size_t len;
	uint32_t i, seen = 0;

	/* 12 calls of 50 ms back to back; at most 4 in flight per connection */
	xdr_enc_init(&e, 64 * 1024);
	for (i = 0; i < 12; i++) {
		size_t start = e.len;
		long m = xdr_reserve(&e, 4);
		trpc_call_header(&e, 1000 + i, TPROG, 1, 2);
		xdr_put_u32(&e, 50);
		xdr_store_u32(e.buf + m, RPC_RM_LAST | (uint32_t)(e.len - start - 4));
	}
	ck_assert_int_eq(trpc_write_all(fd, e.buf, e.len), 0);
	xdr_enc_free(&e);
	for (i = 0; i < 12; i++) {
		buf = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
		ck_assert_uint_ge(r.xid, 1000);
		ck_assert_uint_lt(r.xid, 1012);
		seen |= 1u << (r.xid - 1000);
		free(buf);
	}
	ck_assert_uint_eq(seen, 0xfff);
	ck_assert_int_le(atomic_load(&max_running), 4);
	close(fd);
}
END_TEST

/* Send @n bytes of pattern through proc 4 and check they come back. */
static void echo_blob(int fd, uint32_t xid, size_t n, size_t frag)
{
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *blob = malloc(n ? n : 1), *buf;
	const uint8_t *p;
	uint32_t got;
	size_t len, i;

	for (i = 0; i < n; i++)
		blob[i] = (uint8_t)(i * 7 + xid);
	xdr_enc_init(&e, n + 4096);
	trpc_call_header(&e, xid, TPROG, 1, 4);
	xdr_put_opaque(&e, blob, (uint32_t)n);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, frag), 0);
	xdr_enc_free(&e);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_uint_eq(r.xid, xid);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	ck_assert_int_eq(xdr_get_opaque(&r.res, &p, &got, UINT32_MAX), 0);
	ck_assert_uint_eq(got, n);
	ck_assert(memcmp(p, blob, n) == 0);
	free(buf);
	free(blob);
}

START_TEST(large_records)
{
	int fd = trpc_connect(port);

	/* a 1 MiB WRITE-sized call and reply: many receives, partial sends */
	echo_blob(fd, 1, 1 << 20, 0);
	/* the same in 4000-byte fragments */
	echo_blob(fd, 2, 1 << 20, 4000);
	echo_blob(fd, 3, 0, 0);
	echo_blob(fd, 4, 3, 1);
	close(fd);
}
END_TEST

struct worker_arg {
	int id;
	int ok;
};

static void *client_thread(void *arg)
{
	struct worker_arg *w = arg;
	int fd = trpc_connect(port), i;

	if (fd < 0)
		return NULL;
	for (i = 0; i < 40; i++)
		echo_blob(fd, (uint32_t)(w->id * 1000 + i), (size_t)((i * 7919 + w->id * 131) % 70000), 0);
	close(fd);
	w->ok = 1;
	return NULL;
}

START_TEST(many_connections)
{
	pthread_t th[8];
	struct worker_arg w[8];
	int i;

	for (i = 0; i < 8; i++) {
		w[i].id = i + 1;
		w[i].ok = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, client_thread, &w[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].ok, 1);
	}
	assert_served();
}
END_TEST

START_TEST(max_conns)
{
	int fds[16], extra, i;
	struct trpc_reply r;
	uint8_t *buf;

	for (i = 0; i < 16; i++) {
		fds[i] = trpc_connect(port);
		ck_assert_int_ge(fds[i], 0);
		ck_assert_int_eq(call(fds[i], (uint32_t)i, TPROG, 1, 0, NULL, &r, &buf), 0);
		free(buf);
	}
	/* the 17th is accepted and closed at once */
	extra = trpc_connect(port);
	ck_assert_int_ge(extra, 0);
	ck_assert(trpc_closed(extra));
	close(extra);
	/* a slot frees up when a connection goes */
	close(fds[0]);
	ck_assert(wait_conns(15));
	fds[0] = trpc_connect(port);
	ck_assert_int_eq(call(fds[0], 99, TPROG, 1, 0, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	free(buf);
	for (i = 0; i < 16; i++)
		close(fds[i]);
}
END_TEST

START_TEST(rpc_errors)
{
	int fd = trpc_connect(port);
	struct trpc_reply r;
	uint8_t *buf;

	ck_assert_int_eq(call(fd, 10, 123456, 1, 1, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r.stat, RPC_PROG_UNAVAIL);
	free(buf);
	ck_assert_int_eq(call(fd, 11, TPROG, 3, 1, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.stat, RPC_PROG_MISMATCH);
	ck_assert_uint_eq(r.a, 1);
	ck_assert_uint_eq(r.b, 2);
	free(buf);
	ck_assert_int_eq(call(fd, 12, TPROG, 1, 77, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.stat, RPC_PROC_UNAVAIL);
	free(buf);
	ck_assert_int_eq(call(fd, 13, TPROG, 1, 1, NULL, &r, &buf), 0);   /* echo without its u32 */
	ck_assert_uint_eq(r.stat, RPC_GARBAGE_ARGS);
	ck_assert_uint_eq(xdr_dec_left(&r.res), 0);
	free(buf);
	close(fd);
}
END_TEST

START_TEST(denied)
{
	int fd = trpc_connect(port);
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *buf;
	size_t len;

	/* rpcvers 3 */
	xdr_enc_init(&e, 1024);
	xdr_put_u32(&e, 20);
	xdr_put_u32(&e, RPC_CALL);
	xdr_put_u32(&e, 3);
	xdr_put_u32(&e, TPROG);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_uint_eq(r.xid, 20);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_DENIED);
	ck_assert_uint_eq(r.stat, RPC_MISMATCH);
	ck_assert_uint_eq(r.a, 2);
	ck_assert_uint_eq(r.b, 2);
	free(buf);
	xdr_enc_free(&e);
	/* RPCSEC_GSS credential: we have no authenticator for it */
	xdr_enc_init(&e, 1024);
	xdr_put_u32(&e, 21);
	xdr_put_u32(&e, RPC_CALL);
	xdr_put_u32(&e, 2);
	xdr_put_u32(&e, TPROG);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, RPCSEC_GSS);
	xdr_put_opaque(&e, "xxxx", 4);
	xdr_put_u32(&e, 0);
	xdr_put_u32(&e, 0);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_DENIED);
	ck_assert_uint_eq(r.stat, RPC_AUTH_ERROR);
	ck_assert_uint_eq(r.a, RPC_AUTH_BADCRED);
	free(buf);
	xdr_enc_free(&e);
	/* truncated header: the credential length runs past the record */
	xdr_enc_init(&e, 1024);
	xdr_put_u32(&e, 22);
	xdr_put_u32(&e, RPC_CALL);
	xdr_put_u32(&e, 2);
	xdr_put_u32(&e, TPROG);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, RPC_AUTH_SYS);
	xdr_put_u32(&e, 300);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	buf = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
	ck_assert_uint_eq(r.stat, RPC_AUTH_ERROR);
	ck_assert_uint_eq(r.a, RPC_AUTH_BADCRED);
	free(buf);
	xdr_enc_free(&e);
	close(fd);
	/* the privileged-port hook */
	port_ok = false;
	fd = trpc_connect(port);
	ck_assert_int_eq(call(fd, 23, TPROG, 1, 0, NULL, &r, &buf), 0);
	ck_assert_uint_eq(r.reply_stat, RPC_MSG_DENIED);
	ck_assert_uint_eq(r.stat, RPC_AUTH_ERROR);
	ck_assert_uint_eq(r.a, RPC_AUTH_TOOWEAK);
	free(buf);
	close(fd);
	port_ok = true;
}
END_TEST

START_TEST(oversized_record_mark)
{
	int bad = trpc_connect(port), good = trpc_connect(port);
	uint8_t mark[4];

	xdr_store_u32(mark, RPC_RM_LAST | (MAX_RECORD + 1));
	ck_assert_int_eq(trpc_write_all(bad, mark, 4), 0);
	ck_assert(trpc_closed(bad));
	close(bad);
	/* the connection opened before keeps being served, and new ones too */
	{
		struct trpc_reply r;
		uint8_t *buf;
		uint32_t v = 1;
		ck_assert_int_eq(call(good, 1, TPROG, 1, 1, &v, &r, &buf), 0);
		ck_assert_uint_eq(r.stat, RPC_SUCCESS);
		free(buf);
	}
	close(good);
	assert_served();
}
END_TEST

START_TEST(garbage)
{
	int fd = trpc_connect(port);
	uint8_t junk[512];
	unsigned int i, seed = 12345;

	for (i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245u + 12345u;
		junk[i] = (uint8_t)(seed >> 16);
	}
	ck_assert_int_eq(trpc_write_all(fd, junk, sizeof(junk)), 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	/* a well-framed record that is not a call: closed too */
	fd = trpc_connect(port);
	ck_assert_int_eq(trpc_send_record(fd, "hello, world", 12, 0), 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	/* an empty record */
	fd = trpc_connect(port);
	ck_assert_int_eq(trpc_send_record(fd, "", 0, 0), 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	assert_served();
}
END_TEST

START_TEST(drc_on_the_wire)
{
	int fd = trpc_connect(port);
	struct trpc_reply r;
	uint8_t *buf;
	uint32_t a, b;
	struct drc_stats s;

	ck_assert_int_eq(call(fd, 500, TPROG, 1, 3, NULL, &r, &buf), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &a), 0);
	free(buf);
	/* a retransmission of xid 500 (same connection, so same address and
	 * port): the cached reply, the procedure does not run again */
	ck_assert_int_eq(call(fd, 500, TPROG, 1, 3, NULL, &r, &buf), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &b), 0);
	ck_assert_uint_eq(a, b);
	free(buf);
	ck_assert_uint_eq(atomic_load(&counter), 1);
	/* a new xid runs; it also implies the ACK of 500's reply */
	ck_assert_int_eq(call(fd, 501, TPROG, 1, 3, NULL, &r, &buf), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &b), 0);
	ck_assert_uint_eq(b, a + 1);
	free(buf);
	drc_prune(drc);
	drc_get_stats(drc, &s);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_ge(s.evictions[DRC_EV_IMPLIED_ACK], 1);
	ck_assert_uint_le(s.population, 1);
	close(fd);
}
END_TEST

START_TEST(stop_with_open_connections)
{
	int fd = trpc_connect(port);
	struct xdr_enc e;

	/* a call in progress and a half-sent record at shutdown */
	xdr_enc_init(&e, 1024);
	trpc_call_header(&e, 1, TPROG, 1, 2);
	xdr_put_u32(&e, 200);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
	ck_assert_int_eq(trpc_write_all(fd, "\x80\x00\x01\x00partial", 11), 0);
	xdr_enc_free(&e);
	{
		double end = mono_s() + 20;
		while (atomic_load(&running) != 1 && mono_s() < end)
			usleep(2 * 1000);
	}
	ck_assert_int_eq(atomic_load(&running), 1);   /* the call is being served */
	ck_assert_uint_eq(rpc_svc_conns(svc), 1);
	rpc_svc_stop(svc);
	ck_assert(trpc_closed(fd));
	close(fd);
}
END_TEST

/* Pipeline @n calls of proc 5 (a @size-byte reply each) in one write. */
static void pipeline_big_replies(int fd, uint32_t n, uint32_t size)
{
	struct xdr_enc e;
	uint32_t i;

	xdr_enc_init(&e, n * 128 + 1024);
	for (i = 0; i < n; i++) {
		size_t st = e.len;
		long m = xdr_reserve(&e, 4);
		trpc_call_header(&e, 5000 + i, TPROG, 1, 5);
		xdr_put_u32(&e, size);
		xdr_store_u32(e.buf + m, RPC_RM_LAST | (uint32_t)(e.len - st - 4));
	}
	ck_assert_int_eq(trpc_write_all(fd, e.buf, e.len), 0);
	xdr_enc_free(&e);
}

static int connect_small_rcvbuf(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0), sz = 4096;

	ck_assert_int_ge(fd, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* before connect: the window the client advertises stays small */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* A client pipelines 200 calls with 256 KiB replies and reads none: the
 * gateway keeps at most max_inflight replies queued (not 50 MB), serves
 * other connections meanwhile, and sends everything once the client reads. */
START_TEST(unread_replies_bounded)
{
	enum { n = 200 };
	const uint32_t size = 256 * 1024;
	const size_t bound = 8 * (size + 1024);
	struct rpc_svc_params p = params(8, 2);
	struct trpc_reply r;
	size_t q, peak = 0, len;
	double end;
	uint8_t *buf;
	bool seen[n] = { false };
	uint32_t i;
	int fd;

	teardown();
	p.max_queued = 512 * 1024;
	start_p(&p);
	fd = connect_small_rcvbuf();
	pipeline_big_replies(fd, n, size);
	/* until the server is stuck on this client (replies queued), no
	 * sample may exceed the bound; then watch a little longer */
	end = mono_s() + 20;
	while (mono_s() < end) {
		q = rpc_svc_queued(svc);
		ck_assert_uint_le(q, bound);
		if (q > peak)
			peak = q;
		if (peak && end - mono_s() > 0.3)
			end = mono_s() + 0.3;
		usleep(2 * 1000);
	}
	ck_assert_uint_gt(peak, 0);
	assert_served();
	ck_assert_uint_le(rpc_svc_queued(svc), bound);
	/* the client reads: every reply arrives (in completion order) */
	for (i = 0; i < n; i++) {
		buf = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
		ck_assert_uint_eq(r.stat, RPC_SUCCESS);
		ck_assert_uint_ge(r.xid, 5000);
		ck_assert_uint_lt(r.xid, 5000 + n);
		ck_assert(!seen[r.xid - 5000]);
		seen[r.xid - 5000] = true;
		free(buf);
	}
	/* the ring thread may see the last send complete after we read it */
	end = mono_s() + 20;
	while (rpc_svc_queued(svc) && mono_s() < end)
		usleep(2 * 1000);
	ck_assert_uint_eq(rpc_svc_queued(svc), 0);
	close(fd);
}
END_TEST

/* A client that stops reading for good loses its connection after
 * send_timeout, and the queued replies are freed. */
START_TEST(unread_replies_timeout)
{
	struct rpc_svc_params p = params(8, 2);
	double t0;
	int fd;

	teardown();
	p.send_timeout_ns = 300ull * 1000 * 1000;
	start_p(&p);
	fd = connect_small_rcvbuf();
	ck_assert(wait_conns(1));         /* accepted */
	t0 = mono_s();
	pipeline_big_replies(fd, 64, 256 * 1024);
	ck_assert(wait_conns(0));
	ck_assert(mono_s() - t0 >= 0.25);
	ck_assert_uint_eq(rpc_svc_queued(svc), 0);
	assert_served();
	close(fd);
}
END_TEST

/* A silent connection is closed after idle_timeout; one whose call runs
 * longer than that is not idle. */
START_TEST(idle_timeout)
{
	struct rpc_svc_params p = params(4, 2);
	struct trpc_reply r;
	uint8_t *buf = NULL;
	uint32_t v = 900, out;
	double t0;
	int fd, silent;

	teardown();
	p.idle_timeout_ns = 300ull * 1000 * 1000;
	start_p(&p);
	silent = trpc_connect(port);
	ck_assert_int_ge(silent, 0);
	fd = trpc_connect(port);
	ck_assert_int_ge(fd, 0);
	/* a 900 ms call: in flight, so its connection is kept.  Its reply
	 * leaves no earlier than 0.9 s after t0 (taken before the call is
	 * sent, not after the reply is read: a test thread that is slow to
	 * run after the reply would see the close "early") */
	t0 = mono_s();
	ck_assert_int_eq(call(fd, 1, TPROG, 1, 2, &v, &r, &buf), 0);
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	ck_assert_int_eq(xdr_get_u32(&r.res, &out), 0);
	ck_assert_uint_eq(out, 900);
	free(buf);
	ck_assert(trpc_closed(silent));   /* long idle by now (or soon) */
	close(silent);
	ck_assert(trpc_closed(fd));       /* idle since its reply went out */
	ck_assert_msg(mono_s() - t0 >= 0.9 + 0.25, "closed %.2f s after the call", mono_s() - t0);
	close(fd);
	ck_assert(wait_conns(0));
}
END_TEST

/*
 * Issue 9.6: a record must be whole within record_timeout of its first
 * byte.  50 connections each send the first 40 bytes of a 200-byte record
 * and stop: all are closed (before: kept for as long as the peer liked).
 * A connection that sent nothing is not a half record (idle_timeout is for
 * it), and a client that sends whole records keeps being served.
 */
START_TEST(half_records_closed)
{
	struct rpc_svc_params p = params(4, 2);
	uint8_t buf[44] = { 0 };
	int fds[50], quiet, i;
	double t0;

	teardown();
	p.max_conns = 64;
	p.record_timeout_ns = 500ull * 1000 * 1000;
	start_p(&p);
	quiet = trpc_connect(port);
	ck_assert_int_ge(quiet, 0);
	xdr_store_u32(buf, RPC_RM_LAST | 200);
	t0 = mono_s();                       /* before the first record begins */
	for (i = 0; i < 50; i++) {
		fds[i] = trpc_connect(port);
		ck_assert_int_ge(fds[i], 0);
		ck_assert_int_eq(trpc_write_all(fds[i], buf, sizeof(buf)), 0);
	}
	for (i = 0; i < 50; i++) {
		bool cl = trpc_closed(fds[i]);
		ck_assert_msg(cl, "half record %d still open after %.1f s (%s)", i, mono_s() - t0, strerror(errno));
		close(fds[i]);
	}
	ck_assert(mono_s() - t0 >= 0.4);    /* not before its time */
	ck_assert(wait_conns(1));            /* the quiet one stays */
	assert_served();
	close(quiet);
}
END_TEST

/*
 * Issue 9.6: a record of more than max_frags fragments closes the
 * connection: a flood of empty fragments costs max_frags mark parses, not
 * as many as the peer sends (before: 876M empty fragments were 10 s of
 * CPU).  A record in max_frags fragments is still served.
 */
START_TEST(empty_fragment_flood)
{
	struct rpc_svc_params p = params(4, 2);
	struct xdr_enc e;
	uint8_t *flood, *rep;
	size_t len;
	int fd, i;

	teardown();
	p.max_frags = 64;
	start_p(&p);
	/* 64 fragments: 63 of one byte or so, then the rest */
	xdr_enc_init(&e, 4096);
	trpc_call_header(&e, 7, TPROG, 1, 1);
	xdr_put_u32(&e, 1);
	fd = trpc_connect(port);
	ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, (e.len + 63) / 64), 0);
	rep = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(rep);
	free(rep);
	/* 100,000 empty fragments, then the same call: refused, closed */
	flood = calloc(100000, 4);
	ck_assert_ptr_nonnull(flood);
	trpc_write_all(fd, flood, 100000 * 4);      /* may fail half way: the gateway closed it */
	trpc_send_record(fd, e.buf, e.len, 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	free(flood);
	for (i = 0; i < 2; i++)
		assert_served();
	xdr_enc_free(&e);
}
END_TEST

/*
 * Issue 9.6: connection slots per client address.  One peer (127.0.0.2)
 * opens 1100 connections and leaves them idle: it gets max_conns_per_host
 * of them, the rest are closed at once, and another peer (127.0.0.3) is
 * served (before: the first peer took all max_conns and locked everyone
 * else out).
 */
START_TEST(one_host_cannot_take_every_slot)
{
	struct rpc_svc_params p = params(4, 2);
	struct rlimit rl;
	struct trpc_reply r;
	uint8_t *buf;
	int *fds, other, i, n = 1100, open_ones = 0;

	teardown();
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_msg(rl.rlim_max >= 1500, "needs 1500 file descriptors, the hard limit is %llu",
		      (unsigned long long)rl.rlim_max);
	if (rl.rlim_cur < 1500) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	p.max_conns = 1024;
	p.max_conns_per_host = 64;
	start_p(&p);
	fds = calloc((size_t)n, sizeof(*fds));
	for (i = 0; i < n; i++) {
		fds[i] = trpc_connect_from("127.0.0.2", port);
		ck_assert_msg(fds[i] >= 0, "connect %d: %s", i, strerror(errno));
	}
	/* another peer is served */
	other = trpc_connect_from("127.0.0.3", port);
	ck_assert_int_ge(other, 0);
	ck_assert_msg(call(other, 1, TPROG, 1, 0, NULL, &r, &buf) == 0,
		      "the other peer was not served (%u connections open)", rpc_svc_conns(svc));
	ck_assert_uint_eq(r.stat, RPC_SUCCESS);
	free(buf);
	ck_assert_msg(wait_conns(65), "%u connections open", rpc_svc_conns(svc));
	/* the first 64 of the greedy peer's are the ones it has */
	for (i = 0; i < n; i++) {
		struct pollfd pf = { .fd = fds[i], .events = POLLIN };

		if (poll(&pf, 1, 0) == 0)
			open_ones++;            /* nothing to read, not closed */
	}
	ck_assert_int_eq(open_ones, 64);
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	ck_assert(wait_conns(1));
	/* and it can connect again once it holds fewer */
	i = trpc_connect_from("127.0.0.2", port);
	ck_assert_int_eq(call(i, 2, TPROG, 1, 0, NULL, &r, &buf), 0);
	free(buf);
	close(i);
	close(other);
}
END_TEST

/* Record buffers grow with the bytes that arrived: a mark announcing a
 * megabyte costs nothing until the megabyte comes. */
START_TEST(record_grows_with_data)
{
	struct rpc_rm rm;
	uint8_t mark[4], *body = malloc(1 << 20), *rec;
	size_t used, len, off;
	int r;

	for (off = 0; off < (1 << 20); off++)
		body[off] = (uint8_t)(off * 13);
	rpc_rm_init(&rm, 1056 * 1024, 0);
	xdr_store_u32(mark, RPC_RM_LAST | (1u << 20));
	ck_assert_int_eq(rpc_rm_feed(&rm, mark, 4, &used), 0);
	ck_assert_uint_eq(used, 4);
	ck_assert_uint_eq(rm.cap, 0);
	ck_assert_int_eq(rpc_rm_feed(&rm, body, 100, &used), 0);
	ck_assert_uint_le(rm.cap, 256);
	ck_assert_int_eq(rpc_rm_feed(&rm, body + 100, 70000, &used), 0);
	ck_assert_uint_le(rm.cap, 2 * 70100);
	for (off = 70100; off < (1 << 20); off += used) {
		size_t chunk = (1 << 20) - off < 65536 ? (1 << 20) - off : 65536;
		r = rpc_rm_feed(&rm, body + off, chunk, &used);
		ck_assert_int_eq(r, off + used == (1 << 20) ? 1 : 0);
	}
	ck_assert_uint_eq(rm.cap, 1 << 20);   /* never past the fragment */
	rec = rpc_rm_take(&rm, &len);
	ck_assert_uint_eq(len, 1 << 20);
	ck_assert(memcmp(rec, body, len) == 0);
	free(rec);
	rpc_rm_free(&rm);
	free(body);
}
END_TEST

#define CHILD_CHECK(c)                                                              \
	do {                                                                        \
		if (!(c)) {                                                         \
			fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                   \
		}                                                                   \
	} while (0)

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* In a child with RLIMIT_NOFILE 64: max_conns is clamped to fit; with every
 * descriptor taken, an incoming connection does not make the ring thread
 * spin on a failing accept, and it is accepted once descriptors free up. */
static int emfile_child(void)
{
	struct rlimit rl = { 64, 64 };
	struct rpc_svc_params p = params(4, 1);
	struct trpc_reply r;
	uint8_t *buf = NULL;
	int held[64], nheld = 0, fd, i;
	double c0;

	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	p.max_conns = 1024;
	start_p(&p);
	CHILD_CHECK(rpc_svc_max_conns(svc) == 32);
	while (nheld < 64 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		held[nheld++] = fd;
	CHILD_CHECK(nheld > 0 && errno == EMFILE);
	/* the connection takes the last descriptor; if another thread of the
	 * process took the one freed for it first, free another */
	fd = -1;
	while (fd < 0 && nheld > 0) {
		close(held[--nheld]);
		fd = trpc_connect(port);
		if (fd < 0)
			fprintf(stderr, "connect with %d descriptors held: %s\n", nheld, strerror(errno));
	}
	CHILD_CHECK(fd >= 0);
	while (nheld < 64 && (i = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		held[nheld++] = i;                /* none is left for the accept */
	c0 = cpu_s();
	usleep(1000 * 1000);
	/* a spinning ring thread would burn most of a second */
	CHILD_CHECK(cpu_s() - c0 < 0.3);
	CHILD_CHECK(rpc_svc_conns(svc) == 0);
	for (i = 0; i < nheld; i++)
		close(held[i]);
	CHILD_CHECK(call(fd, 7, TPROG, 1, 0, NULL, &r, &buf) == 0);
	CHILD_CHECK(r.stat == RPC_SUCCESS);
	free(buf);
	close(fd);
	rpc_svc_destroy(svc);
	drc_destroy(drc);
	return 0;
}

START_TEST(accept_out_of_fds)
{
	pid_t pid;
	int st;

	log_init("test_rpc");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(emfile_child());
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: status %#x (see stderr)", st);
}
END_TEST


/* ---- calls the server makes --------------------------------------------------- */

/*
 * rpc_call_begin() writes what rpc_decode_call() reads back (AUTH_SYS and
 * AUTH_NONE), and rpc_decode_reply() reads every reply header the server
 * writes; every truncation of either is refused, never read past.
 */
/*
 * RPCSEC_GSS credentials (RFC 2203 5): decoded with their bounds (version
 * 1, a known gss_proc and service, a handle of at most 32 bytes, nothing
 * after it), and principals mapped as knfsd's gssd does.
 */
START_TEST(gss_cred_and_mapping)
{
	uint8_t b[64];
	struct rpc_gss_cred gc;
	struct rpc_cred cr;
	struct xdr_enc e;

	xdr_enc_init(&e, 64);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, RPCSEC_GSS_DATA);
	xdr_put_u32(&e, 77);
	xdr_put_u32(&e, RPC_GSS_SVC_PRIVACY);
	xdr_put_opaque(&e, "0123456789abcdef", 16);
	memcpy(b, e.buf, e.len);
	ck_assert_int_eq(rpc_gss_decode_cred(b, (uint32_t)e.len, &gc), 0);
	ck_assert_uint_eq(gc.seq, 77);
	ck_assert_uint_eq(gc.service, RPC_GSS_SVC_PRIVACY);
	ck_assert_uint_eq(gc.handle_len, 16);
	ck_assert_int_eq(rpc_gss_decode_cred(b, (uint32_t)e.len - 4, &gc), -EBADMSG);   /* truncated */
	xdr_store_u32(b, 2);                                                          /* version 2 */
	ck_assert_int_eq(rpc_gss_decode_cred(b, (uint32_t)e.len, &gc), -EBADMSG);
	xdr_store_u32(b, 1);
	xdr_store_u32(b + 12, 4);                                                     /* service 4 */
	ck_assert_int_eq(rpc_gss_decode_cred(b, (uint32_t)e.len, &gc), -EBADMSG);
	xdr_enc_free(&e);

	rpc_gss_map_principal("root@EXAMPLE.ORG", "EXAMPLE.ORG", "", &cr);
	ck_assert(!cr.anon);
	ck_assert_uint_eq(cr.uid, 0);                  /* the local user root */
	rpc_gss_map_principal("root@ELSEWHERE", "EXAMPLE.ORG", "", &cr);
	ck_assert(cr.anon);                            /* a realm not ours: anonymous */
	rpc_gss_map_principal("root@ELSEWHERE", "EXAMPLE.ORG", "OTHER, ELSEWHERE", &cr);
	ck_assert(!cr.anon);                           /* unless nfs_gss_realms lists it */
	rpc_gss_map_principal("nfs/client.example.org@EXAMPLE.ORG", "EXAMPLE.ORG", "", &cr);
	ck_assert(!cr.anon);
	ck_assert_uint_eq(cr.uid, 0);                  /* a machine principal: root */
	rpc_gss_map_principal("host/client@EXAMPLE.ORG", "EXAMPLE.ORG", "", &cr);
	ck_assert_uint_eq(cr.uid, 0);
	rpc_gss_map_principal("HTTP/client@EXAMPLE.ORG", "EXAMPLE.ORG", "", &cr);
	ck_assert(cr.anon);                            /* another service's */
	rpc_gss_map_principal("no-such-user-here@EXAMPLE.ORG", "EXAMPLE.ORG", "", &cr);
	ck_assert(cr.anon);
	ck_assert_uint_eq(cr.uid, 65534);
	rpc_gss_map_principal("noatsign", "EXAMPLE.ORG", "", &cr);
	ck_assert(cr.anon);
}
END_TEST

START_TEST(call_and_reply_headers)
{
	struct rpc_call_hdr h = { .prog = 0x40000000, .vers = 1, .proc = 1, .flavor = RPC_AUTH_SYS, .stamp = 9,
				  .uid = 1234, .gid = 77 };
	struct rpc_call c;
	struct rpc_reply rr;
	enum rpc_auth_stat why;
	struct xdr_enc e;
	size_t i;

	snprintf(h.machine, sizeof(h.machine), "gateway-host");
	for (int fl = 0; fl < 2; fl++) {
		h.flavor = fl ? RPC_AUTH_NONE : RPC_AUTH_SYS;
		xdr_enc_init(&e, 4096);
		rpc_call_begin(&e, 0xabc, &h);
		xdr_put_u32(&e, 0x5555);
		ck_assert_int_eq(rpc_reply_end(&e), 0);
		ck_assert_uint_eq(xdr_load_u32(e.buf), RPC_RM_LAST | (uint32_t)(e.len - 4));
		ck_assert_int_eq(rpc_decode_call(e.buf + 4, e.len - 4, &c, &why), RPC_DEC_OK);
		ck_assert_uint_eq(c.xid, 0xabc);
		ck_assert_uint_eq(c.prog, h.prog);
		ck_assert_uint_eq(c.vers, 1);
		ck_assert_uint_eq(c.proc, 1);
		ck_assert_uint_eq(c.cred.flavor, h.flavor);
		if (h.flavor == RPC_AUTH_SYS) {
			ck_assert_uint_eq(c.cred.uid, 1234);
			ck_assert_uint_eq(c.cred.gid, 77);
			ck_assert_str_eq(c.cred.machine, "gateway-host");
		}
		ck_assert_uint_eq(c.args_len, 4);
		for (i = 0; i < e.len - 4 - 4; i++)
			ck_assert_int_ne(rpc_decode_call(e.buf + 4, i, &c, &why), RPC_DEC_OK);
		/* a CALL is not a reply */
		ck_assert_int_eq(rpc_decode_reply(e.buf + 4, e.len - 4, &rr), -EBADMSG);
		xdr_enc_free(&e);
	}

	for (int k = 0; k < 5; k++) {
		size_t hdr;

		xdr_enc_init(&e, 4096);
		rpc_reply_begin(&e);
		switch (k) {
		case 0:
			rpc_reply_accepted(&e, 7, RPC_SUCCESS);
			xdr_put_u32(&e, 0x1234);
			break;
		case 1:
			rpc_reply_prog_mismatch(&e, 7, 2, 3);
			break;
		case 2:
			rpc_reply_rpc_mismatch(&e, 7);
			break;
		case 3:
			rpc_reply_auth_error(&e, 7, RPC_AUTH_TOOWEAK);
			break;
		case 4:
			rpc_reply_accepted(&e, 7, RPC_GARBAGE_ARGS);
			break;
		}
		ck_assert_int_eq(rpc_reply_end(&e), 0);
		ck_assert_int_eq(rpc_decode_reply(e.buf + 4, e.len - 4, &rr), 0);
		ck_assert_uint_eq(rr.xid, 7);
		switch (k) {
		case 0:
			ck_assert_int_eq(rpc_reply_errno(&rr), 0);
			ck_assert_uint_eq(rr.res_len, 4);
			ck_assert_uint_eq(xdr_load_u32(rr.res), 0x1234);
			break;
		case 1:
			ck_assert_uint_eq(rr.stat, RPC_PROG_MISMATCH);
			ck_assert_uint_eq(rr.low, 2);
			ck_assert_uint_eq(rr.high, 3);
			ck_assert_int_eq(rpc_reply_errno(&rr), -EPROTONOSUPPORT);
			break;
		case 2:
			ck_assert_uint_eq(rr.reply_stat, RPC_MSG_DENIED);
			ck_assert_uint_eq(rr.stat, RPC_MISMATCH);
			ck_assert_uint_eq(rr.low, RPC_VERSION);
			break;
		case 3:
			ck_assert_uint_eq(rr.auth_stat, RPC_AUTH_TOOWEAK);
			ck_assert_int_eq(rpc_reply_errno(&rr), -EACCES);
			break;
		case 4:
			ck_assert_int_eq(rpc_reply_errno(&rr), -EINVAL);
			break;
		}
		/* every prefix that cuts into the header is refused */
		hdr = e.len - 4 - (k == 0 ? 4 : 0);
		for (i = 0; i < hdr; i++)
			ck_assert_int_eq(rpc_decode_reply(e.buf + 4, i, &rr), -EBADMSG);
		xdr_enc_free(&e);
	}
	ck_assert_uint_ne(rpc_new_xid(), rpc_new_xid());
}
END_TEST

struct bc_call {
	struct rpc_xprt *x;
	uint32_t xid;
	uint64_t timeout_ns;
	int r;
	uint8_t *reply;
	size_t len;
};

static void *bc_caller(void *arg)
{
	struct bc_call *a = arg;
	struct rpc_call_hdr h = { .prog = 0x40000000, .vers = 1, .proc = 0, .flavor = RPC_AUTH_NONE };
	struct xdr_enc e;
	uint8_t *buf;
	size_t len;

	xdr_enc_init(&e, 4096);
	rpc_call_begin(&e, a->xid, &h);
	ck_assert_int_eq(rpc_reply_end(&e), 0);
	buf = xdr_enc_steal(&e, &len);
	a->r = rpc_xprt_call(a->x, buf, len, a->xid, a->timeout_ns, &a->reply, &a->len);
	return NULL;
}

/* The client's side: read the server's CALL on @fd; answer it unless @mute. */
static uint32_t bc_answer(int fd, bool mute)
{
	struct rpc_call c;
	enum rpc_auth_stat why;
	struct xdr_enc e;
	uint8_t *rec;
	size_t len;
	uint32_t xid;

	rec = trpc_recv_record(fd, &len, NULL);
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(rpc_decode_call(rec, len, &c, &why), RPC_DEC_OK);
	ck_assert_uint_eq(c.prog, 0x40000000);
	xid = c.xid;
	free(rec);
	if (!mute) {
		xdr_enc_init(&e, 4096);
		rpc_reply_begin(&e);
		rpc_reply_accepted(&e, xid, RPC_SUCCESS);
		xdr_put_u32(&e, 0x77);
		ck_assert_int_eq(rpc_reply_end(&e), 0);
		ck_assert_int_eq(trpc_write_all(fd, e.buf, e.len), 0);
		xdr_enc_free(&e);
	}
	return xid;
}

/*
 * Calls from the server on a client's own connection (the NFSv4.1 back
 * channel): the CALL goes out on the connection the client's requests came
 * on, the client's REPLY wakes the caller (not the service), the client's
 * own requests keep being served in between, an unanswered call times out
 * (its late reply is dropped harmlessly), and a call pending when the
 * connection closes fails with -ENOTCONN at once, as does any call after.
 */
START_TEST(back_channel_calls)
{
	int fd = trpc_connect(port);
	struct trpc_reply r;
	struct bc_call a = { .timeout_ns = 10000000000ull };
	struct rpc_xprt *x;
	uint8_t *buf = NULL;
	pthread_t t;
	uint32_t v = 1, out, xid;
	uint64_t t0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(call(fd, 10, TPROG, 1, 6, NULL, &r, &buf), 0);
	free(buf);
	pthread_mutex_lock(&cb_lock);
	x = rpc_xprt_get(cb_xprt);
	pthread_mutex_unlock(&cb_lock);
	ck_assert_ptr_nonnull(x);

	/* a call, answered */
	a.x = x;
	a.xid = rpc_new_xid();
	ck_assert_int_eq(pthread_create(&t, NULL, bc_caller, &a), 0);
	xid = bc_answer(fd, false);
	ck_assert_uint_eq(xid, a.xid);
	pthread_join(t, NULL);
	ck_assert_int_eq(a.r, 0);
	{
		struct rpc_reply rr;

		ck_assert_int_eq(rpc_decode_reply(a.reply, a.len, &rr), 0);
		ck_assert_uint_eq(rr.xid, a.xid);
		ck_assert_uint_eq(xdr_load_u32(rr.res), 0x77);
	}
	free(a.reply);
	a.reply = NULL;
	/* our requests are still served on it */
	ck_assert_int_eq(call(fd, 11, TPROG, 1, 1, &v, &r, &buf), 0);
	ck_assert_int_eq(xdr_get_u32(&r.res, &out), 0);
	ck_assert_uint_eq(out, 2);
	free(buf);

	/* unanswered: times out; the late reply goes nowhere */
	a.xid = rpc_new_xid();
	a.timeout_ns = 300000000ull;
	ck_assert_int_eq(pthread_create(&t, NULL, bc_caller, &a), 0);
	xid = bc_answer(fd, true);
	pthread_join(t, NULL);
	ck_assert_int_eq(a.r, -ETIMEDOUT);
	ck_assert_ptr_null(a.reply);
	{
		struct xdr_enc e;

		xdr_enc_init(&e, 4096);
		rpc_reply_begin(&e);
		rpc_reply_accepted(&e, xid, RPC_SUCCESS);
		ck_assert_int_eq(rpc_reply_end(&e), 0);
		ck_assert_int_eq(trpc_write_all(fd, e.buf, e.len), 0);
		xdr_enc_free(&e);
	}
	ck_assert_int_eq(call(fd, 12, TPROG, 1, 1, &v, &r, &buf), 0);
	ck_assert_uint_eq(r.xid, 12);
	free(buf);

	/* pending when the connection closes: -ENOTCONN, long before the timeout */
	a.xid = rpc_new_xid();
	a.timeout_ns = 30000000000ull;
	t0 = now_mono_ns();
	ck_assert_int_eq(pthread_create(&t, NULL, bc_caller, &a), 0);
	bc_answer(fd, true);
	close(fd);
	pthread_join(t, NULL);
	ck_assert_int_eq(a.r, -ENOTCONN);
	ck_assert_uint_lt(now_mono_ns() - t0, 10000000000ull);
	ck_assert_int_eq(pthread_create(&t, NULL, bc_caller, &a), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(a.r, -ENOTCONN);
	rpc_xprt_put(x);
}
END_TEST

struct tcp_srv {
	int lfd;
	bool stray, mute;
};

static void *tcp_srv_main(void *arg)
{
	struct tcp_srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	struct timeval tv = { .tv_sec = 5 };

	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < 2; i++) {
		struct rpc_call c;
		enum rpc_auth_stat why;
		struct xdr_enc e;
		size_t len;
		uint8_t *rec = trpc_recv_record(fd, &len, NULL);

		if (!rec)
			break;
		ck_assert_int_eq(rpc_decode_call(rec, len, &c, &why), RPC_DEC_OK);
		free(rec);
		if (s->mute)
			continue;
		xdr_enc_init(&e, 4096);
		if (s->stray) {          /* a reply to someone else first */
			rpc_reply_begin(&e);
			rpc_reply_accepted(&e, c.xid + 1000, RPC_SUCCESS);
			rpc_reply_end(&e);
			trpc_write_all(fd, e.buf, e.len);
			xdr_enc_truncate(&e, 0);
		}
		rpc_reply_begin(&e);
		rpc_reply_accepted(&e, c.xid, RPC_SUCCESS);
		xdr_put_u32(&e, c.proc);
		rpc_reply_end(&e);
		trpc_write_all(fd, e.buf, e.len);
		xdr_enc_free(&e);
	}
	close(fd);
	return NULL;
}

/*
 * rpc_tcp_call (NFSv4.0 callbacks): connects, sends, skips a record that is
 * not its reply, keeps the connection for the next call; a peer that does
 * not answer is a timeout; nobody listening is ECONNREFUSED.
 */
START_TEST(tcp_calls)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct tcp_srv s = { .stray = true };
	struct rpc_call_hdr h = { .prog = 0x40000000, .vers = 1, .flavor = RPC_AUTH_SYS, .uid = 0 };
	struct xdr_enc e;
	uint8_t *rep;
	size_t rlen;
	pthread_t t;
	int fd = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(s.lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(s.lfd, 2), 0);
	ck_assert_int_eq(getsockname(s.lfd, (struct sockaddr *)&sin, &sl), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, tcp_srv_main, &s), 0);
	for (uint32_t proc = 0; proc < 2; proc++) {
		uint32_t xid = rpc_new_xid();
		struct rpc_reply rr;
		int sock_before = fd;

		h.proc = proc;
		xdr_enc_init(&e, 4096);
		rpc_call_begin(&e, xid, &h);
		ck_assert_int_eq(rpc_reply_end(&e), 0);
		ck_assert_int_eq(rpc_tcp_call(&fd, (struct sockaddr *)&sin, sl, e.buf, e.len, xid, 4096, 5000000000ull,
					      &rep, &rlen), 0);
		xdr_enc_free(&e);
		ck_assert_int_ge(fd, 0);
		if (proc)
			ck_assert_int_eq(fd, sock_before);   /* the same connection */
		ck_assert_int_eq(rpc_decode_reply(rep, rlen, &rr), 0);
		ck_assert_uint_eq(rr.xid, xid);
		ck_assert_uint_eq(xdr_load_u32(rr.res), proc);
		free(rep);
	}
	pthread_join(t, NULL);
	close(fd);
	fd = -1;

	/* no answer: a timeout, and the socket is gone */
	s.stray = false;
	s.mute = true;
	ck_assert_int_eq(pthread_create(&t, NULL, tcp_srv_main, &s), 0);
	xdr_enc_init(&e, 4096);
	rpc_call_begin(&e, 5, &h);
	rpc_reply_end(&e);
	ck_assert_int_eq(rpc_tcp_call(&fd, (struct sockaddr *)&sin, sl, e.buf, e.len, 5, 4096, 300000000ull, &rep,
				      &rlen), -ETIMEDOUT);
	ck_assert_int_eq(fd, -1);
	pthread_join(t, NULL);
	close(s.lfd);
	/* nobody listens */
	ck_assert_int_eq(rpc_tcp_call(&fd, (struct sockaddr *)&sin, sl, e.buf, e.len, 5, 4096, 1000000000ull, &rep,
				      &rlen), -ECONNREFUSED);
	xdr_enc_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpc");
	TCase *tc = tcase_create("rpc");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, null_and_echo);
	tcase_add_test(tc, call_and_reply_headers);
	tcase_add_test(tc, gss_cred_and_mapping);
	tcase_add_test(tc, back_channel_calls);
	tcase_add_test(tc, tcp_calls);
	tcase_add_test(tc, fragments);
	tcase_add_test(tc, pipelined_and_inflight_limit);
	tcase_add_test(tc, large_records);
	tcase_add_test(tc, many_connections);
	tcase_add_test(tc, max_conns);
	tcase_add_test(tc, rpc_errors);
	tcase_add_test(tc, denied);
	tcase_add_test(tc, oversized_record_mark);
	tcase_add_test(tc, garbage);
	tcase_add_test(tc, drc_on_the_wire);
	tcase_add_test(tc, stop_with_open_connections);
	tcase_add_test(tc, unread_replies_bounded);
	tcase_add_test(tc, unread_replies_timeout);
	tcase_add_test(tc, idle_timeout);
	tcase_add_test(tc, record_grows_with_data);
	tcase_add_test(tc, half_records_closed);
	tcase_add_test(tc, empty_fragment_flood);
	tcase_add_test(tc, one_host_cannot_take_every_slot);
	suite_add_tcase(s, tc);
	tc = tcase_create("fds");        /* no fixture: it forks */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, accept_out_of_fds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
