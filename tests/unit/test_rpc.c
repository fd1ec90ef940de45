/*
 * test_rpc.c - the RPC service over a real loopback socket: the NULL
 * procedure, multi-fragment records, pipelining, flow control at the
 * in-flight limit, RPC-level errors (PROG_UNAVAIL, PROG_MISMATCH,
 * PROC_UNAVAIL, GARBAGE_ARGS, RPC_MISMATCH, AUTH_ERROR), the DRC on the
 * wire, and bad input (garbage, an oversized record mark, a truncated
 * header) answered or closed while another connection keeps being served.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common/log.h"
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

static void start(unsigned int inflight, unsigned int workers)
{
	struct rpc_svc_params p = {
		.max_record = MAX_RECORD, .max_inflight = inflight, .max_conns = 16,
		.workers = workers, .max_reply = MAX_RECORD + 4096,
	};
	struct drc_params dp = { .buckets = 64, .max_entries = 1000, .expiry_ns = 120000000000ull,
				 .csum_len = 256 };
	struct rpc_program prog = { .prog = TPROG, .vers_lo = 1, .vers_hi = 2, .name = "test",
				    .dispatch = tdispatch, .cacheable = tcacheable };

	ck_assert_int_eq(drc_create(&dp, &drc), 0);
	ck_assert_int_eq(rpc_svc_create(&p, drc, &svc), 0);
	ck_assert_int_eq(rpc_svc_register(svc, &prog), 0);
	rpc_svc_set_port_check(svc, tport_check, NULL);
	ck_assert_int_eq(rpc_svc_start(svc, "127.0.0.1:0"), 0);
	port = rpc_svc_port(svc);
	ck_assert_uint_ne(port, 0);
}

static void setup(void)
{
	log_init("test_rpc");
	start(4, 2);
}

static void teardown(void)
{
	rpc_svc_destroy(svc);
	drc_destroy(drc);
	svc = NULL;
	drc = NULL;
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
	for (i = 0; i < 100 && rpc_svc_conns(svc) >= 16; i++)
		usleep(10 * 1000);
	ck_assert_uint_lt(rpc_svc_conns(svc), 16);
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
	usleep(50 * 1000);
	ck_assert_uint_eq(rpc_svc_conns(svc), 1);
	rpc_svc_stop(svc);
	ck_assert(trpc_closed(fd));
	close(fd);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
