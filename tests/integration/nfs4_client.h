/*
 * nfs4_client.h - a small NFSv4.0 / NFSv4.1 client for the gateway's
 * conformance suite (test_nfs4_gw.c): COMPOUNDs built with the gateway's
 * own bounded XDR encoder, sent as ONC RPC records with an AUTH_SYS
 * credential of the test's choosing over a real loopback TCP socket, and
 * replies walked result by result.
 *
 *     struct ncc c;
 *     struct nrep r;
 *
 *     ncc_begin(&c, n);                  4.1: SEQUENCE on n->slot comes first
 *     enc_putfh(&c, &fh);
 *     enc_read(&c, &sid, 0, 100);
 *     ncc_call(&c, &r);                  send, receive, parse the header
 *     ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
 *     ck_assert_uint_eq(rep_next(&r, OP_READ), NFS4_OK);
 *     ... decode READ's body from r.d ...
 *     rep_free(&r);
 *
 * A result that is not the one asked for, or an RPC-level error, fails the
 * test on the spot.  The SEQUENCE result of a 4.1 compound is consumed by
 * ncc_call (its status is in r.seq_status, and r.status says how the
 * compound ended).  Every receive has a socket timeout, so a hung gateway
 * fails a test instead of hanging it.
 */
#ifndef LOLIGO_TESTS_NFS4_CLIENT_H
#define LOLIGO_TESTS_NFS4_CLIENT_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "../unit/test_rpc_util.h"

#define NC_SLOTS 32

struct nc {
	int fd;
	uint16_t port;
	uint32_t minor;
	uint32_t uid, gid;                 /* AUTH_SYS credential of the next call */
	uint64_t clientid;
	uint8_t confirm[NFS4_VERIFIER_SIZE];  /* 4.0: SETCLIENTID's confirm verifier */
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	bool has_session;
	uint32_t slot;                     /* slot of the next compound (4.1) */
	uint32_t slot_seq[NC_SLOTS];       /* last seqid sent per slot */
	uint32_t cs_seq;                   /* next CREATE_SESSION sequence */
	/* set when a thread of the test reads @fd (a back channel: the
	 * gateway's calls arrive between our replies, nfs4_cb_client.h):
	 * ncc_send sends and takes its reply through these */
	int (*send_rec)(struct nc *n, const void *buf, size_t len);
	uint8_t *(*recv_reply)(struct nc *n, uint32_t xid, size_t *len);
	void *cb;
};

struct ncc {
	struct xdr_enc e;
	size_t count_off;
	uint32_t xid;
	struct nc *n;
	bool seq;                          /* a SEQUENCE was put first */
};

struct nrep {
	uint8_t *buf;
	size_t len;
	uint32_t xid;
	uint32_t status, nres, seq_status;
	uint32_t idx;                      /* results read so far */
	struct xdr_dec d;                  /* at the next result (or inside a body) */
};

static _Atomic uint32_t nc_next_xid = 1000;

static inline struct nc *nc_connect(uint16_t port, uint32_t minor)
{
	struct nc *n = calloc(1, sizeof(*n));

	ck_assert_ptr_nonnull(n);
	n->port = port;
	n->minor = minor;
	n->fd = trpc_connect(port);
	ck_assert_int_ge(n->fd, 0);
	n->cs_seq = 1;
	return n;
}

/* another connection for the same client and session */
static inline struct nc *nc_clone(const struct nc *o)
{
	struct nc *n = calloc(1, sizeof(*n));

	ck_assert_ptr_nonnull(n);
	*n = *o;
	n->fd = trpc_connect(o->port);
	ck_assert_int_ge(n->fd, 0);
	return n;
}

static inline void nc_reconnect(struct nc *n)
{
	close(n->fd);
	n->fd = trpc_connect(n->port);
	ck_assert_int_ge(n->fd, 0);
}

static inline void nc_close(struct nc *n)
{
	if (!n)
		return;
	close(n->fd);
	free(n);
}

/* RPC call header with the connection's AUTH_SYS uid/gid */
static inline void ncc_rpc_header(struct ncc *c, uint32_t uid, uint32_t gid)
{
	struct xdr_enc cred;

	xdr_enc_init(&cred, 512);
	xdr_put_u32(&cred, 0);
	xdr_put_string(&cred, "nfs4gw-test");
	xdr_put_u32(&cred, uid);
	xdr_put_u32(&cred, gid);
	xdr_put_u32(&cred, 0);
	xdr_put_u32(&c->e, c->xid);
	xdr_put_u32(&c->e, RPC_CALL);
	xdr_put_u32(&c->e, RPC_VERSION);
	xdr_put_u32(&c->e, NFS4_PROGRAM);
	xdr_put_u32(&c->e, 4);
	xdr_put_u32(&c->e, NFS4_PROC_COMPOUND);
	xdr_put_u32(&c->e, RPC_AUTH_SYS);
	xdr_put_opaque(&c->e, cred.buf, (uint32_t)cred.len);
	xdr_put_u32(&c->e, RPC_AUTH_NONE);
	xdr_put_opaque(&c->e, NULL, 0);
	xdr_enc_free(&cred);
}

static inline void ncc_op(struct ncc *c, uint32_t op)
{
	xdr_patch_u32(&c->e, c->count_off, xdr_load_u32(c->e.buf + c->count_off) + 1);
	xdr_put_u32(&c->e, op);
}

static inline void enc_sequence(struct ncc *c, const uint8_t *sid, uint32_t seq, uint32_t slot, bool cachethis)
{
	ncc_op(c, OP_SEQUENCE);
	xdr_put_fixed(&c->e, sid, NFS4_SESSIONID_SIZE);
	xdr_put_u32(&c->e, seq);
	xdr_put_u32(&c->e, slot);
	xdr_put_u32(&c->e, NC_SLOTS - 1);
	xdr_put_bool(&c->e, cachethis);
}

/* A compound without the automatic SEQUENCE (4.0, or 4.1 session-less ops). */
static inline void ncc_begin_raw(struct ncc *c, struct nc *n, uint32_t minor, uint32_t xid)
{
	memset(c, 0, sizeof(*c));
	xdr_enc_init(&c->e, 4 << 20);
	c->n = n;
	c->xid = xid ? xid : atomic_fetch_add(&nc_next_xid, 1);
	ncc_rpc_header(c, n->uid, n->gid);
	xdr_put_string(&c->e, "nfs4gw");
	xdr_put_u32(&c->e, minor);
	xdr_put_u32(&c->e, 0);
	c->count_off = c->e.len - 4;
}

/* A compound on @n: for 4.1 with a session, SEQUENCE on n->slot first. */
static inline void ncc_begin(struct ncc *c, struct nc *n)
{
	ncc_begin_raw(c, n, n->minor, 0);
	if (n->minor >= 1 && n->has_session) {
		ck_assert_uint_lt(n->slot, NC_SLOTS);
		enc_sequence(c, n->sessionid, ++n->slot_seq[n->slot], n->slot, true);
		c->seq = true;
	}
}

static inline uint32_t rep_next(struct nrep *r, uint32_t op);

static inline void rep_parse(struct nrep *r, bool seq)
{
	struct trpc_reply t;
	const uint8_t *tag;
	uint32_t tl;

	ck_assert_int_eq(trpc_parse_reply(r->buf, r->len, &t), 0);
	ck_assert_uint_eq(t.reply_stat, RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(t.stat, RPC_SUCCESS);
	r->xid = t.xid;
	r->d = t.res;
	ck_assert_int_eq(xdr_get_u32(&r->d, &r->status), 0);
	ck_assert_int_eq(xdr_get_opaque(&r->d, &tag, &tl, 1024), 0);
	ck_assert_int_eq(xdr_get_u32(&r->d, &r->nres), 0);
	r->idx = 0;
	r->seq_status = NFS4_OK;
	if (seq && r->nres) {
		r->seq_status = rep_next(r, OP_SEQUENCE);
		if (r->seq_status == NFS4_OK)
			ck_assert_int_eq(xdr_skip(&r->d, NFS4_SESSIONID_SIZE + 20), 0);
	}
}

/* Send the compound (kept: ncc_resend may send it again), parse the reply. */
static inline void ncc_send(struct ncc *c, int fd, struct nrep *r)
{
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(c->e.err, 0);
	if (c->n->recv_reply && fd == c->n->fd) {
		ck_assert_int_eq(c->n->send_rec(c->n, c->e.buf, c->e.len), 0);
		r->buf = c->n->recv_reply(c->n, c->xid, &r->len);
	} else {
		ck_assert_int_eq(trpc_send_record(fd, c->e.buf, c->e.len, 0), 0);
		r->buf = trpc_recv_record(fd, &r->len, NULL);
	}
	ck_assert_msg(r->buf != NULL, "no reply to xid %u", c->xid);
	rep_parse(r, c->seq);
	ck_assert_uint_eq(r->xid, c->xid);
}

static inline void ncc_free(struct ncc *c)
{
	xdr_enc_free(&c->e);
}

/* Send, receive, parse; the compound is freed. */
static inline void ncc_call(struct ncc *c, struct nrep *r)
{
	ncc_send(c, c->n->fd, r);
	ncc_free(c);
}

static inline void rep_free(struct nrep *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* The next result must be @op: return its status, r->d at its body. */
static inline uint32_t rep_next(struct nrep *r, uint32_t op)
{
	uint32_t rop, st;

	ck_assert_msg(r->idx < r->nres, "result %u (op %u) missing: the compound ended with %u after %u results",
		      r->idx, op, r->status, r->nres);
	ck_assert_int_eq(xdr_get_u32(&r->d, &rop), 0);
	ck_assert_int_eq(xdr_get_u32(&r->d, &st), 0);
	ck_assert_msg(rop == op, "result %u is op %u, want %u", r->idx, rop, op);
	r->idx++;
	return st;
}

/* Send @c and return the compound's status; the reply is freed. */
static inline uint32_t ncc_status(struct ncc *c)
{
	struct nrep r;
	uint32_t st;

	ncc_call(c, &r);
	st = r.status;
	rep_free(&r);
	return st;
}

/* ---- operation encoders ------------------------------------------------------ */

static inline void enc_putrootfh(struct ncc *c)
{
	ncc_op(c, OP_PUTROOTFH);
}

static inline void enc_putfh(struct ncc *c, const struct nfs4_fh *fh)
{
	ncc_op(c, OP_PUTFH);
	nfs4_put_fh(&c->e, fh);
}

static inline void enc_getfh(struct ncc *c)
{
	ncc_op(c, OP_GETFH);
}

static inline void enc_savefh(struct ncc *c)
{
	ncc_op(c, OP_SAVEFH);
}

static inline void enc_restorefh(struct ncc *c)
{
	ncc_op(c, OP_RESTOREFH);
}

static inline void enc_name(struct ncc *c, uint32_t op, const char *name)
{
	ncc_op(c, op);
	xdr_put_string(&c->e, name);
}

static inline void enc_lookup(struct ncc *c, const char *name)
{
	enc_name(c, OP_LOOKUP, name);
}

static inline void enc_remove(struct ncc *c, const char *name)
{
	enc_name(c, OP_REMOVE, name);
}

static inline void enc_rename(struct ncc *c, const char *from, const char *to)
{
	ncc_op(c, OP_RENAME);
	xdr_put_string(&c->e, from);
	xdr_put_string(&c->e, to);
}

/* a bitmap of attribute numbers; -1 ends the list */
static inline void enc_bitmap(struct ncc *c, const int *attrs)
{
	uint32_t w[3] = { 0 };

	for (; *attrs >= 0; attrs++)
		w[*attrs / 32] |= 1u << (*attrs % 32);
	xdr_put_bitmap(&c->e, w, w[2] ? 3 : w[1] ? 2 : 1);
}

static inline void enc_getattr(struct ncc *c, const int *attrs)
{
	ncc_op(c, OP_GETATTR);
	enc_bitmap(c, attrs);
}

static inline void enc_stateid(struct ncc *c, const struct nfs4_stateid *sid)
{
	nfs4_put_stateid(&c->e, sid);
}

/* OPEN4args up to (not including) openhow */
static inline void enc_open_head(struct ncc *c, uint32_t seqid, uint32_t access, uint32_t deny, uint64_t clientid,
				 const char *owner)
{
	ncc_op(c, OP_OPEN);
	xdr_put_u32(&c->e, seqid);
	xdr_put_u32(&c->e, access);
	xdr_put_u32(&c->e, deny);
	xdr_put_u64(&c->e, clientid);
	xdr_put_string(&c->e, owner);
}

#define NC_NOCREATE 0
#define NC_CREATE 1     /* UNCHECKED4, mode 0644 */
#define NC_GUARDED 2    /* GUARDED4, mode 0644 */

/* OPEN CLAIM_NULL of @name in the current filehandle (a directory). */
static inline void enc_open(struct ncc *c, uint32_t seqid, uint32_t access, uint32_t deny, const char *owner,
			    int how, const char *name)
{
	enc_open_head(c, seqid, access, deny, c->n->clientid, owner);
	if (how == NC_NOCREATE) {
		xdr_put_u32(&c->e, 0);
	} else {
		uint32_t w[2] = { 0, 1u << (33 - 32) };

		xdr_put_u32(&c->e, 1);
		xdr_put_u32(&c->e, how == NC_GUARDED ? 1 : 0);
		xdr_put_bitmap(&c->e, w, 2);     /* mode */
		xdr_put_u32(&c->e, 4);
		xdr_put_u32(&c->e, 0644);
	}
	xdr_put_u32(&c->e, 0);                   /* CLAIM_NULL */
	xdr_put_string(&c->e, name);
}

/* OPEN CLAIM_FH (4.1) of the current filehandle. */
static inline void enc_open_fh(struct ncc *c, uint32_t access, uint32_t deny, const char *owner)
{
	enc_open_head(c, 0, access, deny, c->n->clientid, owner);
	xdr_put_u32(&c->e, 0);
	xdr_put_u32(&c->e, 4);                   /* CLAIM_FH */
}

static inline void enc_open_confirm(struct ncc *c, const struct nfs4_stateid *sid, uint32_t seqid)
{
	ncc_op(c, OP_OPEN_CONFIRM);
	enc_stateid(c, sid);
	xdr_put_u32(&c->e, seqid);
}

static inline void enc_open_downgrade(struct ncc *c, const struct nfs4_stateid *sid, uint32_t seqid, uint32_t access,
				      uint32_t deny)
{
	ncc_op(c, OP_OPEN_DOWNGRADE);
	enc_stateid(c, sid);
	xdr_put_u32(&c->e, seqid);
	xdr_put_u32(&c->e, access);
	xdr_put_u32(&c->e, deny);
}

static inline void enc_close(struct ncc *c, uint32_t seqid, const struct nfs4_stateid *sid)
{
	ncc_op(c, OP_CLOSE);
	xdr_put_u32(&c->e, seqid);
	enc_stateid(c, sid);
}

enum { NC_READ_LT = 1, NC_WRITE_LT = 2, NC_READW_LT = 3, NC_WRITEW_LT = 4 };

/* LOCK with open_to_lock_owner4 (a new lock-owner) */
static inline void enc_lock_new(struct ncc *c, uint32_t type, uint64_t off, uint64_t len, uint32_t open_seqid,
				const struct nfs4_stateid *osid, uint32_t lock_seqid, const char *owner)
{
	ncc_op(c, OP_LOCK);
	xdr_put_u32(&c->e, type);
	xdr_put_bool(&c->e, false);
	xdr_put_u64(&c->e, off);
	xdr_put_u64(&c->e, len);
	xdr_put_bool(&c->e, true);
	xdr_put_u32(&c->e, open_seqid);
	enc_stateid(c, osid);
	xdr_put_u32(&c->e, lock_seqid);
	xdr_put_u64(&c->e, c->n->clientid);
	xdr_put_string(&c->e, owner);
}

/* LOCK with exist_lock_owner4 */
static inline void enc_lock(struct ncc *c, uint32_t type, uint64_t off, uint64_t len, const struct nfs4_stateid *lsid,
			    uint32_t lock_seqid)
{
	ncc_op(c, OP_LOCK);
	xdr_put_u32(&c->e, type);
	xdr_put_bool(&c->e, false);
	xdr_put_u64(&c->e, off);
	xdr_put_u64(&c->e, len);
	xdr_put_bool(&c->e, false);
	enc_stateid(c, lsid);
	xdr_put_u32(&c->e, lock_seqid);
}

static inline void enc_lockt(struct ncc *c, uint32_t type, uint64_t off, uint64_t len, const char *owner)
{
	ncc_op(c, OP_LOCKT);
	xdr_put_u32(&c->e, type);
	xdr_put_u64(&c->e, off);
	xdr_put_u64(&c->e, len);
	xdr_put_u64(&c->e, c->n->clientid);
	xdr_put_string(&c->e, owner);
}

static inline void enc_locku(struct ncc *c, uint32_t type, uint32_t seqid, const struct nfs4_stateid *lsid,
			     uint64_t off, uint64_t len)
{
	ncc_op(c, OP_LOCKU);
	xdr_put_u32(&c->e, type);
	xdr_put_u32(&c->e, seqid);
	enc_stateid(c, lsid);
	xdr_put_u64(&c->e, off);
	xdr_put_u64(&c->e, len);
}

static inline void enc_read(struct ncc *c, const struct nfs4_stateid *sid, uint64_t off, uint32_t count)
{
	ncc_op(c, OP_READ);
	enc_stateid(c, sid);
	xdr_put_u64(&c->e, off);
	xdr_put_u32(&c->e, count);
}

static inline void enc_write(struct ncc *c, const struct nfs4_stateid *sid, uint64_t off, uint32_t stable,
			     const void *data, uint32_t len)
{
	ncc_op(c, OP_WRITE);
	enc_stateid(c, sid);
	xdr_put_u64(&c->e, off);
	xdr_put_u32(&c->e, stable);
	xdr_put_opaque(&c->e, data, len);
}

/* SETATTR of a raw fattr4: bitmap words @w (3) and values @vals */
static inline void enc_setattr_raw(struct ncc *c, const struct nfs4_stateid *sid, const uint32_t *w,
				   const void *vals, uint32_t vlen)
{
	ncc_op(c, OP_SETATTR);
	enc_stateid(c, sid);
	xdr_put_bitmap(&c->e, w, w[2] ? 3 : w[1] ? 2 : 1);
	xdr_put_opaque(&c->e, vals, vlen);
}

static inline void enc_setattr_size(struct ncc *c, const struct nfs4_stateid *sid, uint64_t size)
{
	uint32_t w[3] = { 1u << 4, 0, 0 };
	uint8_t v[8];

	xdr_store_u32(v, (uint32_t)(size >> 32));
	xdr_store_u32(v + 4, (uint32_t)size);
	enc_setattr_raw(c, sid, w, v, 8);
}

static inline void enc_renew(struct ncc *c, uint64_t clientid)
{
	ncc_op(c, OP_RENEW);
	xdr_put_u64(&c->e, clientid);
}

static inline void enc_setclientid(struct ncc *c, uint64_t verifier, const char *id, uint32_t cb_prog)
{
	ncc_op(c, OP_SETCLIENTID);
	xdr_put_u64(&c->e, verifier);
	xdr_put_string(&c->e, id);
	xdr_put_u32(&c->e, cb_prog);
	xdr_put_string(&c->e, "tcp");
	xdr_put_string(&c->e, "127.0.0.1.3.1");
	xdr_put_u32(&c->e, 1);                   /* callback_ident */
}

static inline void enc_setclientid_confirm(struct ncc *c, uint64_t clientid, const uint8_t *verf)
{
	ncc_op(c, OP_SETCLIENTID_CONFIRM);
	xdr_put_u64(&c->e, clientid);
	xdr_put_fixed(&c->e, verf, NFS4_VERIFIER_SIZE);
}

static inline void enc_exchange_id(struct ncc *c, const char *owner, uint64_t verifier, uint32_t flags, uint32_t how)
{
	ncc_op(c, OP_EXCHANGE_ID);
	xdr_put_u64(&c->e, verifier);
	xdr_put_string(&c->e, owner);
	xdr_put_u32(&c->e, flags);
	xdr_put_u32(&c->e, how);
	if (how == SP4_MACH_CRED) {
		uint32_t w[1] = { 0 };

		xdr_put_bitmap(&c->e, w, 1);
		xdr_put_bitmap(&c->e, w, 1);
	}
	xdr_put_u32(&c->e, 0);                   /* no impl id */
}

static inline void enc_chan(struct ncc *c, const struct nfs4_channel_attrs *a)
{
	nfs4_put_channel_attrs(&c->e, a);
}

static const struct nfs4_channel_attrs nc_fore = { 0, 1 << 20, 1 << 20, 64 << 10, 16, NC_SLOTS, 0, 0 };
static const struct nfs4_channel_attrs nc_back = { 0, 4096, 4096, 0, 2, 1, 0, 0 };

static inline void enc_create_session(struct ncc *c, uint64_t clientid, uint32_t seq, uint32_t flags,
				      const struct nfs4_channel_attrs *fore, const struct nfs4_channel_attrs *back)
{
	ncc_op(c, OP_CREATE_SESSION);
	xdr_put_u64(&c->e, clientid);
	xdr_put_u32(&c->e, seq);
	xdr_put_u32(&c->e, flags);
	enc_chan(c, fore);
	enc_chan(c, back);
	xdr_put_u32(&c->e, 0x40000000);          /* cb_program */
	xdr_put_u32(&c->e, 1);
	xdr_put_u32(&c->e, RPC_AUTH_NONE);
}

static inline void enc_test_stateid(struct ncc *c, const struct nfs4_stateid *sids, uint32_t n)
{
	ncc_op(c, OP_TEST_STATEID);
	xdr_put_u32(&c->e, n);
	for (uint32_t i = 0; i < n; i++)
		enc_stateid(c, &sids[i]);
}

static inline void enc_free_stateid(struct ncc *c, const struct nfs4_stateid *sid)
{
	ncc_op(c, OP_FREE_STATEID);
	enc_stateid(c, sid);
}

static inline void enc_readdir(struct ncc *c, const int *attrs)
{
	static const uint8_t zero[NFS4_VERIFIER_SIZE];

	ncc_op(c, OP_READDIR);
	xdr_put_u64(&c->e, 0);
	xdr_put_fixed(&c->e, zero, sizeof(zero));
	xdr_put_u32(&c->e, 4096);
	xdr_put_u32(&c->e, 32768);
	enc_bitmap(c, attrs);
}

/* ---- result decoders ---------------------------------------------------------- */

static inline void rep_stateid(struct nrep *r, struct nfs4_stateid *sid)
{
	ck_assert_int_eq(nfs4_get_stateid(&r->d, sid), 0);
}

static inline void rep_fh(struct nrep *r, struct nfs4_fh *fh)
{
	ck_assert_int_eq(nfs4_get_fh(&r->d, fh), 0);
}

/* OPEN4resok: stateid and rflags; the rest (cinfo, attrset, delegation) skipped. */
static inline void rep_open(struct nrep *r, struct nfs4_stateid *sid, uint32_t *rflags, uint32_t *deleg)
{
	struct xdr_bitmap bm;
	uint32_t fl, dt;

	rep_stateid(r, sid);
	ck_assert_int_eq(xdr_skip(&r->d, 20), 0);                  /* change_info4 */
	ck_assert_int_eq(xdr_get_u32(&r->d, &fl), 0);
	ck_assert_int_eq(xdr_get_bitmap(&r->d, &bm), 0);
	ck_assert_int_eq(xdr_get_u32(&r->d, &dt), 0);
	if (dt == 3) {                                              /* OPEN_DELEGATE_NONE_EXT */
		uint32_t why, b;

		ck_assert_int_eq(xdr_get_u32(&r->d, &why), 0);
		if (why == 1 || why == 2)                           /* WND4_CONTENTION / RESOURCE */
			ck_assert_int_eq(xdr_get_u32(&r->d, &b), 0);
		if (deleg)
			*deleg = 3 | why << 8;
	} else {
		ck_assert_uint_eq(dt, 0);                           /* no delegations are granted */
		if (deleg)
			*deleg = dt;
	}
	if (rflags)
		*rflags = fl;
}

/* LOCK4denied */
struct nc_denied {
	uint64_t off, len, clientid;
	uint32_t type;
	char owner[128];
};

static inline void rep_denied(struct nrep *r, struct nc_denied *dn)
{
	const uint8_t *o;
	uint32_t n;

	memset(dn, 0, sizeof(*dn));
	ck_assert_int_eq(xdr_get_u64(&r->d, &dn->off), 0);
	ck_assert_int_eq(xdr_get_u64(&r->d, &dn->len), 0);
	ck_assert_int_eq(xdr_get_u32(&r->d, &dn->type), 0);
	ck_assert_int_eq(xdr_get_u64(&r->d, &dn->clientid), 0);
	ck_assert_int_eq(xdr_get_opaque(&r->d, &o, &n, NFS4_OPAQUE_LIMIT), 0);
	memcpy(dn->owner, o, n < sizeof(dn->owner) - 1 ? n : sizeof(dn->owner) - 1);
}

/* READ4resok: eof and the data (a pointer into the reply) */
static inline void rep_read(struct nrep *r, bool *eof, const uint8_t **data, uint32_t *len)
{
	ck_assert_int_eq(xdr_get_bool(&r->d, eof), 0);
	ck_assert_int_eq(xdr_get_opaque(&r->d, data, len, 1 << 24), 0);
}

/* fattr4: the bitmap and the attribute values (a decoder over them) */
static inline void rep_fattr(struct nrep *r, struct xdr_bitmap *bm, struct xdr_dec *vals)
{
	const uint8_t *v;
	uint32_t n;

	ck_assert_int_eq(xdr_get_bitmap(&r->d, bm), 0);
	ck_assert_int_eq(xdr_get_opaque(&r->d, &v, &n, 1 << 20), 0);
	xdr_dec_init(vals, v, n);
}

/* ---- sessions and clients ----------------------------------------------------- */

/* 4.0: SETCLIENTID + SETCLIENTID_CONFIRM for @id. */
/* nc_lookup - the handle of @name in directory @d (asserts it exists) */
static inline void nc_lookup(struct nc *n, const struct nfs4_fh *d, const char *name, struct nfs4_fh *fh)
{
	struct ncc c;
	struct nrep r;

	ncc_begin(&c, n);
	enc_putfh(&c, d);
	enc_lookup(&c, name);
	enc_getfh(&c);
	ncc_call(&c, &r);
	ck_assert_msg(r.status == NFS4_OK, "LOOKUP %s: %u", name, r.status);
	rep_next(&r, OP_PUTFH);
	rep_next(&r, OP_LOOKUP);
	rep_next(&r, OP_GETFH);
	rep_fh(&r, fh);
	rep_free(&r);
}

/*
 * nc_readdir_entry - READDIR of @d (one reply) asking for @attrs: true with
 * @v at entry @name's attribute values, which live in @r (rep_free(@r) once
 * read); false, @r freed, when the reply does not list @name.
 */
static inline bool nc_readdir_entry(struct nc *n, const struct nfs4_fh *d, const int *attrs, const char *name,
				    struct nrep *r, struct xdr_dec *v)
{
	struct ncc c;
	bool more;

	ncc_begin(&c, n);
	enc_putfh(&c, d);
	enc_readdir(&c, attrs);
	ncc_call(&c, r);
	ck_assert_uint_eq(rep_next(r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(r, OP_READDIR), NFS4_OK);
	ck_assert_int_eq(xdr_skip(&r->d, NFS4_VERIFIER_SIZE), 0);
	for (;;) {
		char ename[256];
		uint64_t cookie;
		struct xdr_bitmap bm;

		ck_assert_int_eq(xdr_get_bool(&r->d, &more), 0);
		if (!more)
			break;
		ck_assert_int_eq(xdr_get_u64(&r->d, &cookie), 0);
		ck_assert_int_eq(xdr_get_string(&r->d, ename, sizeof(ename), 255), 0);
		rep_fattr(r, &bm, v);
		if (!strcmp(ename, name))
			return true;
	}
	rep_free(r);
	return false;
}

static inline void nc_setclientid(struct nc *n, const char *id, uint64_t verifier)
{
	struct ncc c;
	struct nrep r;

	ncc_begin_raw(&c, n, 0, 0);
	enc_setclientid(&c, verifier, id, 0x40000000);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_SETCLIENTID), NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.d, &n->clientid), 0);
	ck_assert_int_eq(xdr_get_fixed(&r.d, n->confirm, NFS4_VERIFIER_SIZE), 0);
	rep_free(&r);
	ncc_begin_raw(&c, n, 0, 0);
	enc_setclientid_confirm(&c, n->clientid, n->confirm);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
}

/* 4.1: EXCHANGE_ID and CREATE_SESSION for @owner, and RECLAIM_COMPLETE if @rc. */
static inline void nc_session_rc(struct nc *n, const char *owner, uint64_t verifier, bool rc)
{
	struct ncc c;
	struct nrep r;
	uint32_t seq;

	ncc_begin_raw(&c, n, 1, 0);
	enc_exchange_id(&c, owner, verifier, 0, SP4_NONE);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_EXCHANGE_ID), NFS4_OK);
	ck_assert_int_eq(xdr_get_u64(&r.d, &n->clientid), 0);
	ck_assert_int_eq(xdr_get_u32(&r.d, &seq), 0);
	rep_free(&r);
	n->cs_seq = seq;
	ncc_begin_raw(&c, n, 1, 0);
	enc_create_session(&c, n->clientid, n->cs_seq++, 0, &nc_fore, &nc_back);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_CREATE_SESSION), NFS4_OK);
	ck_assert_int_eq(xdr_get_fixed(&r.d, n->sessionid, NFS4_SESSIONID_SIZE), 0);
	rep_free(&r);
	n->has_session = true;
	memset(n->slot_seq, 0, sizeof(n->slot_seq));
	if (!rc)
		return;
	ncc_begin(&c, n);
	ncc_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
}

static inline void nc_session(struct nc *n, const char *owner, uint64_t verifier)
{
	nc_session_rc(n, owner, verifier, true);
}

/* The handle of @path ("a/b", relative to the root). */
static inline void nc_lookup_path(struct nc *n, const char *path, struct nfs4_fh *fh)
{
	char buf[512], *save = NULL, *comp;
	struct ncc c;
	struct nrep r;
	int k = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	ncc_begin(&c, n);
	enc_putrootfh(&c);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save), k++)
		enc_lookup(&c, comp);
	enc_getfh(&c);
	ncc_call(&c, &r);
	ck_assert_msg(r.status == NFS4_OK, "lookup %s: %u", path, r.status);
	ck_assert_uint_eq(rep_next(&r, OP_PUTROOTFH), NFS4_OK);
	for (int i = 0; i < k; i++)
		ck_assert_uint_eq(rep_next(&r, OP_LOOKUP), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_GETFH), NFS4_OK);
	rep_fh(&r, fh);
	rep_free(&r);
}

/*
 * OPEN @name in directory @dir for @owner and GETFH; 4.0: OPEN_CONFIRM when
 * asked.  *@seqid is the open-owner's next seqid (4.0) and is advanced.
 * Return: the OPEN's status.
 */
static inline uint32_t nc_open(struct nc *n, const struct nfs4_fh *dir, const char *name, uint32_t access,
			       uint32_t deny, const char *owner, int how, uint32_t *seqid, struct nfs4_stateid *sid,
			       struct nfs4_fh *fh)
{
	struct ncc c;
	struct nrep r;
	struct nfs4_fh ofh;
	struct nfs4_stateid osid;
	uint32_t st, rflags = 0, sq = seqid ? *seqid : 0;

	if (!sid)
		sid = &osid;

	ncc_begin(&c, n);
	enc_putfh(&c, dir);
	enc_open(&c, sq, access, deny, owner, how, name);
	enc_getfh(&c);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_OPEN);
	if (seqid && st != NFS4ERR_BAD_SEQID && st != NFS4ERR_BAD_STATEID && st != NFS4ERR_STALE_CLIENTID &&
	    st != NFS4ERR_BADXDR && st != NFS4ERR_RESOURCE && st != NFS4ERR_NOFILEHANDLE)
		(*seqid)++;
	if (st) {
		rep_free(&r);
		return st;
	}
	rep_open(&r, sid, &rflags, NULL);
	ck_assert_uint_eq(rep_next(&r, OP_GETFH), NFS4_OK);
	rep_fh(&r, &ofh);
	if (fh)
		*fh = ofh;
	rep_free(&r);
	if (n->minor == 0 && (rflags & 0x2)) {
		struct nfs4_fh f = fh ? *fh : ofh;

		ck_assert_ptr_nonnull(seqid);
		ncc_begin(&c, n);
		enc_putfh(&c, &f);
		enc_open_confirm(&c, sid, (*seqid)++);
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
		ck_assert_uint_eq(rep_next(&r, OP_OPEN_CONFIRM), NFS4_OK);
		rep_stateid(&r, sid);
		rep_free(&r);
	}
	return NFS4_OK;
}

/* PUTFH + one stateid-returning op already encoded by @enc; returns the op's status and stateid. */
static inline uint32_t nc_fh_op(struct nc *n, const struct nfs4_fh *fh, uint32_t op,
				void (*enc)(struct ncc *c, void *arg), void *arg, struct nfs4_stateid *out)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc(&c, arg);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, op);
	if (!st && out)
		rep_stateid(&r, out);
	rep_free(&r);
	return st;
}

#endif
