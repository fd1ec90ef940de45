/*
 * test_rpc_nfs4.c - the NFSv4 core over a real loopback socket: the
 * NFSv4.1 session life cycle (EXCHANGE_ID, CREATE_SESSION and its replay,
 * SEQUENCE with slot replay and RETRY_UNCACHED_REP, BIND_CONN_TO_SESSION,
 * RECLAIM_COMPLETE, DESTROY_SESSION, DESTROY_CLIENTID), the COMPOUND rules
 * (op position, minor versions, illegal ops, NOTSUPP stubs), the DRC for
 * NFSv4.0 compounds that change state, and bad input: a COMPOUND of 10,000
 * operations, truncated XDR, unknown programs and versions, garbage and
 * oversized record marks, each answered or closed while another connection
 * keeps being served.
 */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/gw.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/rpc/drc.h"
#include "test_rpc_util.h"

static struct drc *drc;
static struct rpc_svc *svc;
static struct nfs4_server *srv;
static uint16_t port;
static _Atomic uint32_t next_xid = 1;

static void setup(void)
{
	struct rpc_svc_params sp;
	struct drc_params dp;
	struct nfs4_params np;

	log_init("test_rpc_nfs4");
	cfg_init("nfs");
	rpc_svc_params_from_config(&sp);
	sp.workers = 2;
	sp.max_record = 256 * 1024;
	drc_params_from_config(&dp);
	dp.perf_group = NULL;
	nfs4_params_from_config(&np, sp.max_record, sp.max_reply);
	ck_assert_int_eq(drc_create(&dp, &drc), 0);
	ck_assert_int_eq(rpc_svc_create(&sp, drc, &svc), 0);
	ck_assert_int_eq(nfs4_server_create(&np, NULL, &srv), 0);
	ck_assert_int_eq(nfs4_register(srv, svc), 0);
	ck_assert_int_eq(rpc_svc_start(svc, "127.0.0.1:0"), 0);
	port = rpc_svc_port(svc);
}

static void teardown(void)
{
	rpc_svc_destroy(svc);
	nfs4_server_destroy(srv);
	drc_destroy(drc);
}

/* ---- a minimal NFSv4 client ------------------------------------------------ */

struct compound {
	struct xdr_enc e;
	size_t count_off;
	uint32_t xid;
};

static void c_begin(struct compound *c, uint32_t minor, uint32_t xid)
{
	xdr_enc_init(&c->e, 4 << 20);
	c->xid = xid ? xid : atomic_fetch_add(&next_xid, 1);
	trpc_call_header(&c->e, c->xid, NFS4_PROGRAM, 4, NFS4_PROC_COMPOUND);
	xdr_put_string(&c->e, "test");
	xdr_put_u32(&c->e, minor);
	xdr_put_u32(&c->e, 0);
	c->count_off = c->e.len - 4;
}

static void c_op(struct compound *c, uint32_t op)
{
	xdr_patch_u32(&c->e, c->count_off, xdr_load_u32(c->e.buf + c->count_off) + 1);
	xdr_put_u32(&c->e, op);
}

static void op_exchange_id(struct compound *c, const char *owner, uint64_t verifier, uint32_t flags)
{
	c_op(c, OP_EXCHANGE_ID);
	xdr_put_u64(&c->e, verifier);
	xdr_put_opaque(&c->e, owner, (uint32_t)strlen(owner));
	xdr_put_u32(&c->e, flags);
	xdr_put_u32(&c->e, SP4_NONE);
	xdr_put_u32(&c->e, 0);               /* no impl id */
}

static void put_chan(struct compound *c, uint32_t maxops, uint32_t reqs)
{
	struct nfs4_channel_attrs a = { 0, 1 << 20, 1 << 20, 8192, maxops, reqs, 0, 0 };

	nfs4_put_channel_attrs(&c->e, &a);
}

static void op_create_session(struct compound *c, uint64_t clientid, uint32_t seq, uint32_t maxops)
{
	c_op(c, OP_CREATE_SESSION);
	xdr_put_u64(&c->e, clientid);
	xdr_put_u32(&c->e, seq);
	/* no back channel: this client reads nothing but its replies (the
	 * gateway would probe one with CB_NULL; test_nfs4_gw_cb.c covers that) */
	xdr_put_u32(&c->e, 0);
	put_chan(c, maxops, 16);
	put_chan(c, 2, 1);
	xdr_put_u32(&c->e, 0x40000000);      /* cb_program */
	xdr_put_u32(&c->e, 1);
	xdr_put_u32(&c->e, RPC_AUTH_SYS);    /* authsys_parms */
	xdr_put_u32(&c->e, 0);
	xdr_put_string(&c->e, "client");
	xdr_put_u32(&c->e, 0);
	xdr_put_u32(&c->e, 0);
	xdr_put_u32(&c->e, 1);
	xdr_put_u32(&c->e, 0);
}

static void op_sequence(struct compound *c, const uint8_t *sid, uint32_t seq, uint32_t slot, bool cachethis)
{
	c_op(c, OP_SEQUENCE);
	xdr_put_fixed(&c->e, sid, NFS4_SESSIONID_SIZE);
	xdr_put_u32(&c->e, seq);
	xdr_put_u32(&c->e, slot);
	xdr_put_u32(&c->e, slot);
	xdr_put_bool(&c->e, cachethis);
}

static void op_sessionid(struct compound *c, uint32_t op, const uint8_t *sid)
{
	c_op(c, op);
	xdr_put_fixed(&c->e, sid, NFS4_SESSIONID_SIZE);
}

struct creply {
	uint8_t *buf;
	size_t len;
	struct trpc_reply r;
	uint32_t status, nres;
	uint32_t op[16], st[16];
	struct xdr_dec body;       /* after the first result's status */
	const uint8_t *res_start;  /* COMPOUND4res */
	size_t res_len;
};

/* Send, receive, parse: status, results (op and status of each), and the
 * first result's body position. */
static void c_call(int fd, struct compound *c, struct creply *cr)
{
	uint32_t i, tl;
	const uint8_t *tag;

	memset(cr, 0, sizeof(*cr));
	ck_assert_int_eq(c->e.err, 0);
	ck_assert_int_eq(trpc_send_record(fd, c->e.buf, c->e.len, 0), 0);
	xdr_enc_free(&c->e);
	cr->buf = trpc_recv_record(fd, &cr->len, NULL);
	ck_assert_ptr_nonnull(cr->buf);
	ck_assert_int_eq(trpc_parse_reply(cr->buf, cr->len, &cr->r), 0);
	ck_assert_uint_eq(cr->r.xid, c->xid);
	if (cr->r.reply_stat != RPC_MSG_ACCEPTED || cr->r.stat != RPC_SUCCESS)
		return;
	cr->res_start = cr->r.res.p;
	cr->res_len = xdr_dec_left(&cr->r.res);
	ck_assert_int_eq(xdr_get_u32(&cr->r.res, &cr->status), 0);
	ck_assert_int_eq(xdr_get_opaque(&cr->r.res, &tag, &tl, 1024), 0);
	ck_assert_int_eq(xdr_get_u32(&cr->r.res, &cr->nres), 0);
	for (i = 0; i < cr->nres && i < 16; i++) {
		ck_assert_int_eq(xdr_get_u32(&cr->r.res, &cr->op[i]), 0);
		ck_assert_int_eq(xdr_get_u32(&cr->r.res, &cr->st[i]), 0);
		if (i == 0)
			cr->body = cr->r.res;
		if (cr->nres > 1 && i + 1 < cr->nres)
			break;  /* bodies vary: only the first is parsed by callers */
	}
}

static void c_free(struct creply *cr)
{
	free(cr->buf);
}

/* Send @c and check the COMPOUND's status; the reply is freed. */
static void c_expect(int fd, struct compound *c, uint32_t status)
{
	struct creply r;

	c_call(fd, c, &r);
	ck_assert_uint_eq(r.status, status);
	c_free(&r);
}

/* A COMPOUND of one SEQUENCE (slot 0, not cached) on @sid: check its status. */
static void seq_expect(int fd, const uint8_t *sid, uint32_t seq, uint32_t status)
{
	struct compound c;

	c_begin(&c, 1, 0);
	op_sequence(&c, sid, seq, 0, false);
	c_expect(fd, &c, status);
}

/* EXCHANGE_ID + CREATE_SESSION on @fd; returns the session id. */
static uint64_t make_session(int fd, const char *owner, uint8_t *sid, uint32_t maxops)
{
	struct compound c;
	struct creply r;
	uint64_t clientid;
	uint32_t seq;

	c_begin(&c, 1, 0);
	op_exchange_id(&c, owner, 42, 0);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.body, &clientid), 0);
	ck_assert_int_eq(xdr_get_u32(&r.body, &seq), 0);
	ck_assert_uint_eq(seq, 1);
	c_free(&r);
	c_begin(&c, 1, 0);
	op_create_session(&c, clientid, 1, maxops);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.body, sid, NFS4_SESSIONID_SIZE), 0);
	c_free(&r);
	return clientid;
}

/* Another connection is served: a whole session handshake and a SEQUENCE. */
static void assert_served(void)
{
	int fd = trpc_connect(port);
	uint8_t sid[NFS4_SESSIONID_SIZE];
	char owner[64];

	snprintf(owner, sizeof(owner), "bystander-%u", atomic_load(&next_xid));
	make_session(fd, owner, sid, 16);
	seq_expect(fd, sid, 1, NFS4_OK);
	close(fd);
}

/* ---- sessions --------------------------------------------------------------- */

START_TEST(session_lifecycle)
{
	int fd = trpc_connect(port), fd2;
	uint8_t sid[NFS4_SESSIONID_SIZE], sid2[NFS4_SESSIONID_SIZE];
	struct compound c;
	struct creply r, r2;
	uint64_t clientid, cid2;
	uint32_t seq, flags;

	clientid = make_session(fd, "client-a", sid, 16);
	/* CREATE_SESSION retried with the same sequence: the same session */
	c_begin(&c, 1, 0);
	op_create_session(&c, clientid, 1, 16);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.body, sid2, NFS4_SESSIONID_SIZE), 0);
	ck_assert(memcmp(sid, sid2, NFS4_SESSIONID_SIZE) == 0);
	c_free(&r);
	/* a sequence from the future */
	c_begin(&c, 1, 0);
	op_create_session(&c, clientid, 3, 16);
	c_expect(fd, &c, NFS4ERR_SEQ_MISORDERED);
	/* EXCHANGE_ID again: the record is confirmed now */
	c_begin(&c, 1, 0);
	op_exchange_id(&c, "client-a", 42, 0);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.body, &cid2), 0);
	ck_assert_int_eq(xdr_get_u32(&r.body, &seq), 0);
	ck_assert_int_eq(xdr_get_u32(&r.body, &flags), 0);
	ck_assert(cid2 == clientid);
	ck_assert_uint_eq(seq, 2);
	ck_assert(flags & EXCHGID4_FLAG_CONFIRMED_R);
	c_free(&r);

	/* SEQUENCE, and its retry from the slot cache: byte for byte */
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 0, true);
	c_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_uint_eq(r.nres, 2);
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 0, true);
	c_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	c_call(fd, &c, &r2);
	ck_assert_uint_eq(r2.status, NFS4_OK);   /* not COMPLETE_ALREADY: it did not run again */
	ck_assert_uint_eq(r.res_len, r2.res_len);
	ck_assert(memcmp(r.res_start, r2.res_start, r.res_len) == 0);
	c_free(&r);
	c_free(&r2);
	/* the next seqid runs it again */
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 2, 0, true);
	c_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	c_expect(fd, &c, NFS4ERR_COMPLETE_ALREADY);

	/* an uncached reply: the retry gets RETRY_UNCACHED_REP on the 2nd op */
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 1, false);
	c_op(&c, OP_GETFH);
	c_expect(fd, &c, NFS4ERR_NOFILEHANDLE);
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 1, false);
	c_op(&c, OP_GETFH);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.nres, 2);
	ck_assert_uint_eq(r.st[0], NFS4_OK);
	ck_assert_uint_eq(r.op[0], OP_SEQUENCE);
	ck_assert_uint_eq(r.status, NFS4ERR_RETRY_UNCACHED_REP);
	c_free(&r);

	/* BADSLOT, SEQ_MISORDERED, BADSESSION */
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 1000, false);
	c_expect(fd, &c, NFS4ERR_BADSLOT);
	seq_expect(fd, sid, 7, NFS4ERR_SEQ_MISORDERED);

	/* a second connection joins the session (fore channel only: *_OR_BOTH
	 * would make it the back channel too, as knfsd does, and it would be
	 * probed with a CB_NULL this client does not read) */
	fd2 = trpc_connect(port);
	c_begin(&c, 1, 0);
	op_sessionid(&c, OP_BIND_CONN_TO_SESSION, sid);
	xdr_put_u32(&c.e, CDFC4_FORE);
	xdr_put_bool(&c.e, false);
	c_expect(fd2, &c, NFS4_OK);
	seq_expect(fd2, sid, 3, NFS4_OK);
	close(fd2);

	/* DESTROY_CLIENTID with a session: busy; destroy the session first */
	c_begin(&c, 1, 0);
	c_op(&c, OP_DESTROY_CLIENTID);
	xdr_put_u64(&c.e, clientid);
	c_expect(fd, &c, NFS4ERR_CLIENTID_BUSY);
	c_begin(&c, 1, 0);
	op_sessionid(&c, OP_DESTROY_SESSION, sid);
	c_expect(fd, &c, NFS4_OK);
	seq_expect(fd, sid, 4, NFS4ERR_BADSESSION);
	c_begin(&c, 1, 0);
	c_op(&c, OP_DESTROY_CLIENTID);
	xdr_put_u64(&c.e, clientid);
	c_expect(fd, &c, NFS4_OK);
	c_begin(&c, 1, 0);
	op_create_session(&c, clientid, 2, 16);
	c_expect(fd, &c, NFS4ERR_STALE_CLIENTID);
	close(fd);
}
END_TEST

START_TEST(client_reboot_replaces_old_state)
{
	int fd = trpc_connect(port);
	uint8_t sid[NFS4_SESSIONID_SIZE], sid2[NFS4_SESSIONID_SIZE];
	struct compound c;
	struct creply r;
	uint64_t cid, cid2;

	cid = make_session(fd, "rebooter", sid, 16);
	/* same owner, new verifier: a new incarnation */
	c_begin(&c, 1, 0);
	op_exchange_id(&c, "rebooter", 43, 0);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.body, &cid2), 0);
	ck_assert(cid2 != cid);
	c_free(&r);
	/* the old session lives until the new record is confirmed */
	seq_expect(fd, sid, 1, NFS4_OK);
	c_begin(&c, 1, 0);
	op_create_session(&c, cid2, 1, 16);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.body, sid2, NFS4_SESSIONID_SIZE), 0);
	c_free(&r);
	seq_expect(fd, sid, 2, NFS4ERR_BADSESSION);
	close(fd);
}
END_TEST

START_TEST(session_maxops)
{
	int fd = trpc_connect(port);
	uint8_t sid[NFS4_SESSIONID_SIZE];
	struct compound c;
	struct creply r;
	int i;

	make_session(fd, "small", sid, 3);
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 0, false);
	for (i = 0; i < 3; i++)
		c_op(&c, OP_GETFH);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.nres, 1);
	ck_assert_uint_eq(r.op[0], OP_SEQUENCE);
	ck_assert_uint_eq(r.status, NFS4ERR_TOO_MANY_OPS);
	c_free(&r);
	close(fd);
}
END_TEST

/* SEQUENCE renews the lease; a client that goes quiet for a lease period
 * loses its sessions. */
START_TEST(lease_expiry)
{
	int fd = trpc_connect(port), i;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	struct compound c;
	uint64_t clientid;

	/* renewal: 2.4 s of SEQUENCEs 300 ms apart outlive a 2 s lease (a
	 * loaded machine may pause us up to 1.7 s without failing this) */
	pthread_mutex_lock(&srv->lock);         /* the reaper reads it under the lock */
	srv->p.lease_ns = 2000ull * 1000 * 1000;
	pthread_mutex_unlock(&srv->lock);
	clientid = make_session(fd, "leaser", sid, 16);
	for (i = 1; i <= 8; i++) {
		usleep(300 * 1000);
		seq_expect(fd, sid, (uint32_t)i, NFS4_OK);
	}
	/* silence with a 1.2 s lease: wait (without renewing) until the
	 * reaper has expired the client, however late it runs */
	pthread_mutex_lock(&srv->lock);
	srv->p.lease_ns = 1200ull * 1000 * 1000;
	pthread_mutex_unlock(&srv->lock);
	usleep(1200 * 1000);
	for (i = 0; i < 2000; i++) {       /* up to 20 s */
		struct nfs4_client *clp;
		bool found = false;
		pthread_mutex_lock(&srv->lock);
		for (clp = srv->clients; clp; clp = clp->next)
			found |= clp->clientid == clientid;
		pthread_mutex_unlock(&srv->lock);
		if (!found)
			break;
		usleep(10 * 1000);
	}
	ck_assert_int_lt(i, 2000);
	seq_expect(fd, sid, 9, NFS4ERR_BADSESSION);
	c_begin(&c, 1, 0);
	op_create_session(&c, clientid, 2, 16);
	c_expect(fd, &c, NFS4ERR_STALE_CLIENTID);
	close(fd);
}
END_TEST

/* One session used from several connections at once, a slot each: the
 * slots are independent and every request is answered in order per slot. */
static uint8_t shared_sid[NFS4_SESSIONID_SIZE];

static void *slot_user(void *arg)
{
	uint32_t slot = (uint32_t)(uintptr_t)arg, seq;
	int fd = trpc_connect(port);
	struct compound c;
	struct creply r;

	for (seq = 1; seq <= 60; seq++) {
		c_begin(&c, 1, 0);
		op_sequence(&c, shared_sid, seq, slot, seq % 2);
		c_op(&c, OP_GETFH);
		c_call(fd, &c, &r);
		ck_assert_uint_eq(r.st[0], NFS4_OK);
		ck_assert_uint_eq(r.status, NFS4ERR_NOFILEHANDLE);
		c_free(&r);
	}
	close(fd);
	return NULL;
}

START_TEST(concurrent_slots)
{
	int fd = trpc_connect(port);
	pthread_t th[4];
	uintptr_t i;

	make_session(fd, "parallel", shared_sid, 16);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, slot_user, (void *)i), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	close(fd);
}
END_TEST

/* ---- COMPOUND rules ------------------------------------------------------------ */

START_TEST(compound_rules)
{
	int fd = trpc_connect(port);
	struct compound c;
	struct creply r;
	uint8_t sid[NFS4_SESSIONID_SIZE];

	/* 4.1 without SEQUENCE */
	c_begin(&c, 1, 0);
	c_op(&c, OP_PUTROOTFH);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_OP_NOT_IN_SESSION);
	ck_assert_uint_eq(r.nres, 1);
	c_free(&r);
	/* EXCHANGE_ID must be alone */
	c_begin(&c, 1, 0);
	op_exchange_id(&c, "x", 1, 0);
	c_op(&c, OP_PUTROOTFH);
	c_expect(fd, &c, NFS4ERR_NOT_ONLY_OP);
	/* SEQUENCE only first */
	make_session(fd, "rules", sid, 16);
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 1, 0, false);
	op_sequence(&c, sid, 1, 1, false);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.nres, 2);
	ck_assert_uint_eq(r.status, NFS4ERR_SEQUENCE_POS);
	c_free(&r);
	/* 4.0-only operations in 4.1 */
	c_begin(&c, 1, 0);
	op_sequence(&c, sid, 2, 0, false);
	c_op(&c, OP_RENEW);
	xdr_put_u64(&c.e, 1);
	c_expect(fd, &c, NFS4ERR_NOTSUPP);
	/* minor version 2 */
	c_begin(&c, 2, 0);
	c_op(&c, OP_PUTROOTFH);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_MINOR_VERS_MISMATCH);
	ck_assert_uint_eq(r.nres, 0);
	c_free(&r);
	/* 4.1 operations are illegal in 4.0, and so are unknown numbers */
	c_begin(&c, 0, 0);
	op_sequence(&c, sid, 3, 0, false);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_OP_ILLEGAL);
	ck_assert_uint_eq(r.op[0], OP_ILLEGAL);
	c_free(&r);
	c_begin(&c, 0, 0);
	c_op(&c, 9999);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_OP_ILLEGAL);
	ck_assert_uint_eq(r.op[0], OP_ILLEGAL);
	c_free(&r);
	/* current filehandle required */
	c_begin(&c, 0, 0);
	c_op(&c, OP_GETFH);
	c_expect(fd, &c, NFS4ERR_NOFILEHANDLE);
	/* an empty compound */
	c_begin(&c, 0, 0);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4_OK);
	ck_assert_uint_eq(r.nres, 0);
	c_free(&r);
	close(fd);
}
END_TEST

/* NFSv4.0 compounds that change state go through the DRC; others do not. */
START_TEST(v40_drc)
{
	int fd = trpc_connect(port);
	struct compound c;
	struct creply r, r2;
	struct drc_stats s;

	c_begin(&c, 0, 7777);
	c_op(&c, OP_SETCLIENTID);     /* state-changing */
	xdr_put_u64(&c.e, 1);
	c_call(fd, &c, &r);
	c_begin(&c, 0, 7777);         /* retransmitted */
	c_op(&c, OP_SETCLIENTID);
	xdr_put_u64(&c.e, 1);
	c_call(fd, &c, &r2);
	ck_assert_uint_eq(r.len, r2.len);
	ck_assert(memcmp(r.buf, r2.buf, r.len) == 0);
	c_free(&r);
	c_free(&r2);
	drc_get_stats(drc, &s);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.inserts, 1);
	/* a read-only compound is not kept */
	c_begin(&c, 0, 7778);
	c_op(&c, OP_GETFH);
	c_call(fd, &c, &r);
	c_free(&r);
	c_begin(&c, 0, 7778);
	c_op(&c, OP_GETFH);
	c_call(fd, &c, &r);
	c_free(&r);
	drc_get_stats(drc, &s);
	ck_assert_uint_eq(s.hits, 1);
	/* 4.1 never uses it */
	c_begin(&c, 1, 7779);
	c_op(&c, OP_PUTROOTFH);
	c_call(fd, &c, &r);
	c_free(&r);
	drc_get_stats(drc, &s);
	ck_assert_uint_eq(s.misses, 3);
	close(fd);
}
END_TEST

/* ---- bad input ----------------------------------------------------------------- */

START_TEST(ten_thousand_ops)
{
	int fd = trpc_connect(port);
	struct compound c;
	struct creply r;
	int i, minor;

	for (minor = 0; minor <= 1; minor++) {
		c_begin(&c, (uint32_t)minor, 0);
		for (i = 0; i < 10000; i++)
			c_op(&c, OP_PUTROOTFH);
		c_call(fd, &c, &r);
		ck_assert_uint_eq(r.r.stat, RPC_SUCCESS);
		ck_assert_uint_eq(r.status, minor ? NFS4ERR_TOO_MANY_OPS : NFS4ERR_RESOURCE);
		ck_assert_uint_eq(r.nres, 1);
		ck_assert_uint_eq(r.op[0], OP_PUTROOTFH);
		c_free(&r);
	}
	/* the count alone claims 10,000 ops with none behind it */
	c_begin(&c, 0, 0);
	xdr_patch_u32(&c.e, c.count_off, 10000);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_RESOURCE);
	ck_assert_uint_eq(r.nres, 0);
	c_free(&r);
	close(fd);
	assert_served();
}
END_TEST

START_TEST(truncated_xdr)
{
	int fd = trpc_connect(port);
	struct compound c;
	struct creply r;

	/* an op whose arguments stop short */
	c_begin(&c, 1, 0);
	c_op(&c, OP_EXCHANGE_ID);
	xdr_put_u32(&c.e, 1);        /* half a verifier */
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.status, NFS4ERR_BADXDR);
	ck_assert_uint_eq(r.op[0], OP_EXCHANGE_ID);
	c_free(&r);
	/* ops promised but missing */
	c_begin(&c, 0, 0);
	xdr_patch_u32(&c.e, c.count_off, 3);
	c_expect(fd, &c, NFS4ERR_BADXDR);
	/* the COMPOUND header itself cut short: GARBAGE_ARGS */
	c_begin(&c, 0, 0);
	xdr_enc_truncate(&c.e, c.count_off - 4);
	c_call(fd, &c, &r);
	ck_assert_uint_eq(r.r.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(r.r.stat, RPC_GARBAGE_ARGS);
	c_free(&r);
	/* a tag longer than anything sane */
	{
		struct xdr_enc e;
		uint8_t *buf;
		size_t len;
		struct trpc_reply tr;

		xdr_enc_init(&e, 1 << 20);
		trpc_call_header(&e, 31337, NFS4_PROGRAM, 4, 1);
		xdr_put_u32(&e, 0x7fffffff);
		ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
		xdr_enc_free(&e);
		buf = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(trpc_parse_reply(buf, len, &tr), 0);
		ck_assert_uint_eq(tr.stat, RPC_GARBAGE_ARGS);
		free(buf);
	}
	close(fd);
	assert_served();
}
END_TEST

START_TEST(wrong_program_version_proc)
{
	int fd = trpc_connect(port);
	struct xdr_enc e;
	struct trpc_reply r;
	uint8_t *buf;
	size_t len;
	uint32_t cases[4][3] = {
		{ 100005, 3, 1 },          /* MOUNT: not served */
		{ NFS4_PROGRAM, 3, 1 },    /* NFSv3 (not yet) */
		{ NFS4_PROGRAM, 4, 2 },    /* no procedure 2 in v4 */
		{ NFS4_PROGRAM, 4, 0 },    /* NULL */
	};
	uint32_t want[4] = { RPC_PROG_UNAVAIL, RPC_PROG_MISMATCH, RPC_PROC_UNAVAIL, RPC_SUCCESS };
	int i;

	for (i = 0; i < 4; i++) {
		xdr_enc_init(&e, 1024);
		trpc_call_header(&e, 100 + (uint32_t)i, cases[i][0], cases[i][1], cases[i][2]);
		ck_assert_int_eq(trpc_send_record(fd, e.buf, e.len, 0), 0);
		xdr_enc_free(&e);
		buf = trpc_recv_record(fd, &len, NULL);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(trpc_parse_reply(buf, len, &r), 0);
		ck_assert_uint_eq(r.reply_stat, RPC_MSG_ACCEPTED);
		ck_assert_uint_eq(r.stat, want[i]);
		if (want[i] == RPC_PROG_MISMATCH) {
			ck_assert_uint_eq(r.a, 4);
			ck_assert_uint_eq(r.b, 4);
		}
		free(buf);
	}
	close(fd);
	assert_served();
}
END_TEST

START_TEST(garbage_and_oversized)
{
	int fd = trpc_connect(port), keep = trpc_connect(port);
	uint8_t junk[300], mark[4];
	uint8_t sid[NFS4_SESSIONID_SIZE];
	unsigned int i, seed = 99;

	/* a connection with a session stays usable throughout */
	make_session(keep, "keeper", sid, 16);
	for (i = 0; i < sizeof(junk); i++) {
		seed = seed * 1664525u + 1013904223u;
		junk[i] = (uint8_t)(seed >> 24);
	}
	ck_assert_int_eq(trpc_write_all(fd, junk, sizeof(junk)), 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	fd = trpc_connect(port);
	xdr_store_u32(mark, RPC_RM_LAST | 0x7ffffff0u);
	ck_assert_int_eq(trpc_write_all(fd, mark, 4), 0);
	ck_assert(trpc_closed(fd));
	close(fd);
	seq_expect(keep, sid, 1, NFS4_OK);
	close(keep);
	assert_served();
}
END_TEST

/* gw_start/gw_stop with an admin socket: `drc dump` and `nfs clients`. */
START_TEST(gateway_and_asok)
{
	struct asok *a;
	struct gw *gw;
	char dir[] = "/tmp/loligo-gw-XXXXXX", path[256];
	struct json_object *req, *reply, *v;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/asok", dir);
	ck_assert_int_eq(asok_start(path, &a), 0);
	ck_assert_int_eq(gw_start("127.0.0.1:0", NULL, a, &gw), 0);
	port = gw_port(gw);
	ck_assert_uint_ne(port, 0);
	{
		/* the same port again, and an address that is not one */
		struct gw *gw2;
		char ap[64];
		snprintf(ap, sizeof(ap), "127.0.0.1:%u", port);
		ck_assert_int_eq(gw_start(ap, NULL, NULL, &gw2), -EADDRINUSE);
		ck_assert_int_eq(gw_start("no-port-here", NULL, NULL, &gw2), -EINVAL);
	}
	fd = trpc_connect(port);
	make_session(fd, "asok-client", sid, 16);

	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("drc dump"));
	ck_assert_int_eq(asok_request(path, req, &reply, 5000), 0);
	ck_assert(json_object_object_get_ex(reply, "population", &v));
	ck_assert(json_object_object_get_ex(reply, "evictions", &v));
	json_object_put(reply);
	json_object_put(req);
	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("nfs clients"));
	ck_assert_int_eq(asok_request(path, req, &reply, 5000), 0);
	ck_assert(json_object_object_get_ex(reply, "clients", &v));
	ck_assert_int_eq((int)json_object_array_length(v), 1);
	json_object_put(reply);
	close(fd);
	gw_stop(gw);
	/* after the gateway is gone the command answers, not crashes */
	ck_assert_int_eq(asok_request(path, req, &reply, 5000), 0);
	ck_assert(json_object_object_get_ex(reply, "error", &v));
	json_object_put(reply);
	json_object_put(req);
	asok_stop(a);
	rmdir(dir);
}
END_TEST

/* A CB_COMPOUND4res { CB_SEQUENCE ok, CB_GETATTR @st [fattr4 @w, @vals] } */
static void cb_getattr_res(struct xdr_enc *e, const uint8_t *sid, uint32_t st, uint32_t w, const void *vals,
			   uint32_t vlen)
{
	xdr_put_u32(e, st);
	xdr_put_opaque(e, NULL, 0);
	xdr_put_u32(e, 2);
	xdr_put_u32(e, OP_CB_SEQUENCE);
	xdr_put_u32(e, NFS4_OK);
	xdr_put_fixed(e, sid, NFS4_SESSIONID_SIZE);
	xdr_put_u32(e, 9);
	xdr_put_u32(e, 1);
	xdr_put_u32(e, 3);
	xdr_put_u32(e, 3);
	xdr_put_u32(e, OP_CB_GETATTR);
	xdr_put_u32(e, st);
	if (st == NFS4_OK) {
		xdr_put_bitmap(e, &w, 1);
		xdr_put_opaque(e, vals, vlen);
	}
}

/*
 * CB_GETATTR's XDR (RFC 8881 20.1): the call the gateway sends decodes to
 * CB_SEQUENCE + CB_GETATTR(fh, change|size); the holder's answer parses
 * back to what it said (change, size, or only one of them, or an error
 * status); every truncation, an attribute we did not ask for, and bytes
 * left over in the attribute list are refused.
 */
START_TEST(cb_getattr_xdr)
{
	struct nfs4_cb_args a = { .minorversion = 1, .sequence = true, .seqid = 9, .slotid = 1, .highest_slotid = 3,
				  .getattr = true, .getattr_mask = NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE };
	struct nfs4_cb_res r;
	struct xdr_enc e;
	struct xdr_dec d;
	struct xdr_bitmap bm;
	struct nfs4_fh fh;
	const uint8_t *tag;
	uint32_t v, tl;
	uint8_t vals[24];

	memset(a.sessionid, 0x5a, sizeof(a.sessionid));
	a.fh.len = 12;
	memset(a.fh.data, 0xc3, a.fh.len);
	xdr_enc_init(&e, 4096);
	ck_assert_int_eq(nfs4_cb_put_compound(&e, &a), 0);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(xdr_get_opaque(&d, &tag, &tl, 64), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(xdr_get_u32(&d, &v), 0);   /* ident */
	ck_assert_int_eq(xdr_get_u32(&d, &v), 0);
	ck_assert_uint_eq(v, 2);                     /* two operations */
	ck_assert_int_eq(xdr_get_u32(&d, &v), 0);
	ck_assert_uint_eq(v, OP_CB_SEQUENCE);
	ck_assert_int_eq(xdr_skip(&d, NFS4_SESSIONID_SIZE + 5 * 4), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &v), 0);
	ck_assert_uint_eq(v, OP_CB_GETATTR);
	ck_assert_int_eq(nfs4_get_fh(&d, &fh), 0);
	ck_assert_uint_eq(fh.len, 12);
	ck_assert_int_eq(memcmp(fh.data, a.fh.data, 12), 0);
	ck_assert_int_eq(xdr_get_bitmap(&d, &bm), 0);
	ck_assert_uint_eq(bm.nwords, 1);
	ck_assert_uint_eq(bm.w[0], (1u << 3) | (1u << 4));
	ck_assert_uint_eq(xdr_dec_left(&d), 0);
	xdr_enc_free(&e);

	/* the answer: change then size */
	xdr_store_u32(vals, 0x11);
	xdr_store_u32(vals + 4, 0x22334455);
	xdr_store_u32(vals + 8, 0);
	xdr_store_u32(vals + 12, 4096);
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4_OK, NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE, vals, 16);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), 0);
	ck_assert(r.has_seq && r.has_getattr);
	ck_assert_uint_eq(r.getattr_status, NFS4_OK);
	ck_assert_uint_eq(r.getattr_mask, NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE);
	ck_assert_uint_eq(r.change, 0x1122334455ull);
	ck_assert_uint_eq(r.size, 4096);
	for (size_t n = 0; n < e.len; n++)
		ck_assert_msg(nfs4_cb_get_compound_res(e.buf, n, &r) != 0 || !r.has_getattr,
			      "a reply cut at %zu parsed", n);
	xdr_enc_free(&e);
	/* only the size */
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4_OK, NFS4_CB_GETATTR_SIZE, vals + 8, 8);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), 0);
	ck_assert_uint_eq(r.getattr_mask, NFS4_CB_GETATTR_SIZE);
	ck_assert_uint_eq(r.size, 4096);
	xdr_enc_free(&e);
	/* an error: no attributes */
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4ERR_BADHANDLE, 0, NULL, 0);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), 0);
	ck_assert(r.has_getattr);
	ck_assert_uint_eq(r.getattr_status, NFS4ERR_BADHANDLE);
	ck_assert_uint_eq(r.getattr_mask, 0);
	xdr_enc_free(&e);
	/* an attribute we did not ask for (FATTR4_TYPE), bytes left over, too few */
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4_OK, (1u << 1) | NFS4_CB_GETATTR_SIZE, vals, 12);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), -EBADMSG);
	xdr_enc_free(&e);
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4_OK, NFS4_CB_GETATTR_SIZE, vals, 16);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), -EBADMSG);
	xdr_enc_free(&e);
	xdr_enc_init(&e, 4096);
	cb_getattr_res(&e, a.sessionid, NFS4_OK, NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE, vals, 8);
	ck_assert_int_eq(nfs4_cb_get_compound_res(e.buf, e.len, &r), -EBADMSG);
	xdr_enc_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpc_nfs4");
	TCase *tc = tcase_create("nfs4");
	TCase *tg = tcase_create("gateway");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, session_lifecycle);
	tcase_add_test(tc, client_reboot_replaces_old_state);
	tcase_add_test(tc, session_maxops);
	tcase_add_test(tc, lease_expiry);
	tcase_add_test(tc, concurrent_slots);
	tcase_add_test(tc, compound_rules);
	tcase_add_test(tc, v40_drc);
	tcase_add_test(tc, ten_thousand_ops);
	tcase_add_test(tc, truncated_xdr);
	tcase_add_test(tc, wrong_program_version_proc);
	tcase_add_test(tc, garbage_and_oversized);
	tcase_add_test(tc, cb_getattr_xdr);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tg, 30);
	tcase_add_test(tg, gateway_and_asok);
	suite_add_tcase(s, tg);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
