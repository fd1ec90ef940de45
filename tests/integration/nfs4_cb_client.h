/*
 * nfs4_cb_client.h - the callback side of the test NFSv4 client
 * (nfs4_client.h): a reader thread owns the connection's receive side,
 * hands REPLY records to the test (ncc_send waits for its xid) and answers
 * the gateway's CALL records itself, as a client's callback service does:
 *
 *   CB_NULL                 -> success
 *   CB_COMPOUND             -> CB_SEQUENCE checked against our own record of
 *                              the back channel's slots (seqid + 1: new;
 *                              the same: a retry; anything else:
 *                              NFS4ERR_SEQ_MISORDERED), CB_RECALL recorded
 *                              and answered NFS4_OK (or ncb->recall_status)
 *
 * ncb_attach(n) starts it on n->fd, ncb_detach() stops it.  Knobs: `mute`
 * (read calls, answer none: a client whose callback service hangs) and
 * `seq_status` (answer CB_SEQUENCE with that error).  For NFSv4.0, a
 * callback server of its own: ncb40_listen() and ncb40_serve_one().
 */
#ifndef LOLIGO_TESTS_NFS4_CB_CLIENT_H
#define LOLIGO_TESTS_NFS4_CB_CLIENT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/time.h"
#include "nfs4_client.h"

#ifndef NFS4_CB_PROC_NULL   /* a gateway without callbacks (failing-before runs) */
#define NFS4_CB_VERSION 1
#define NFS4_CB_PROC_NULL 0
#define NFS4_CB_PROC_COMPOUND 1
#define OP_CB_RECALL 4
#define OP_CB_SEQUENCE 11
#endif

struct ncb_rec {
	uint8_t *buf;
	size_t len;
	struct ncb_rec *next;
};

struct ncb {
	struct nc *n;
	pthread_t thr;
	_Atomic bool stop;
	pthread_mutex_t lock;            /* everything below */
	pthread_cond_t cond;
	pthread_mutex_t wlock;           /* writes to n->fd */
	struct ncb_rec *replies;
	bool eof;
	/* what the callback service saw */
	unsigned int cb_null, cb_compound, recalls, misordered;
	uint32_t prog, vers, minor, ident;
	uint8_t seq_sid[NFS4_SESSIONID_SIZE];
	uint32_t seq_seqid, seq_slot, seq_highest;
	uint32_t slot_seq[8];            /* the back channel's slots, as we saw them */
	struct nfs4_stateid recall_sid;
	struct nfs4_fh recall_fh;
	unsigned int getattrs;           /* CB_GETATTRs answered */
	struct nfs4_fh getattr_fh;
	uint32_t getattr_req;            /* the bitmap's word 0 it asked for */
	/* what CB_GETATTR answers: status, then (NFS4_OK) the change and size */
	uint32_t getattr_status;
	uint64_t getattr_change, getattr_size;
	/* knobs */
	bool mute;
	uint32_t seq_status;             /* CB_SEQUENCE's answer (NFS4_OK) */
	uint32_t recall_status;          /* CB_RECALL's answer (NFS4_OK) */
};

/* The reply to a CB call: RPC accepted header + @body. */
static inline void ncb_reply(struct xdr_enc *e, uint32_t xid)
{
	xdr_put_u32(e, 0);                       /* record mark, patched */
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_REPLY);
	xdr_put_u32(e, RPC_MSG_ACCEPTED);
	xdr_put_u32(e, RPC_AUTH_NONE);
	xdr_put_u32(e, 0);
	xdr_put_u32(e, RPC_SUCCESS);
}

/*
 * Answer one CB call in @rec into @e (with its record mark).  Shared by
 * the 4.1 back channel and the 4.0 callback server.  Caller holds b->lock.
 */
static inline void ncb_answer_locked(struct ncb *b, const uint8_t *rec, size_t len, struct xdr_enc *e)
{
	struct rpc_call c;
	enum rpc_auth_stat why;
	struct xdr_dec d;
	const uint8_t *tag;
	uint32_t tl, nops, op, i, nres = 0, status = NFS4_OK;
	size_t nres_off, st_off;

	ck_assert_int_eq(rpc_decode_call(rec, len, &c, &why), RPC_DEC_OK);
	b->prog = c.prog;
	b->vers = c.vers;
	ncb_reply(e, c.xid);
	if (c.proc == NFS4_CB_PROC_NULL) {
		b->cb_null++;
		goto out;
	}
	ck_assert_uint_eq(c.proc, NFS4_CB_PROC_COMPOUND);
	b->cb_compound++;
	xdr_dec_init(&d, c.args, c.args_len);
	ck_assert_int_eq(xdr_get_opaque(&d, &tag, &tl, 1024), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &b->minor), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &b->ident), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &nops), 0);
	st_off = e->len;
	xdr_put_u32(e, NFS4_OK);
	xdr_put_opaque(e, NULL, 0);
	nres_off = e->len;
	xdr_put_u32(e, 0);
	for (i = 0; i < nops && status == NFS4_OK; i++) {
		ck_assert_int_eq(xdr_get_u32(&d, &op), 0);
		if (op == OP_CB_SEQUENCE) {
			uint8_t sid[NFS4_SESSIONID_SIZE];
			uint32_t seq, slot, highest, nrcl;
			bool cachethis;

			ck_assert_uint_eq(i, 0);
			ck_assert_int_eq(xdr_get_fixed(&d, sid, sizeof(sid)), 0);
			ck_assert_int_eq(xdr_get_u32(&d, &seq), 0);
			ck_assert_int_eq(xdr_get_u32(&d, &slot), 0);
			ck_assert_int_eq(xdr_get_u32(&d, &highest), 0);
			ck_assert_int_eq(xdr_get_bool(&d, &cachethis), 0);
			ck_assert_int_eq(xdr_get_u32(&d, &nrcl), 0);
			ck_assert_uint_eq(nrcl, 0);
			ck_assert_uint_lt(slot, 8);
			memcpy(b->seq_sid, sid, sizeof(sid));
			b->seq_seqid = seq;
			b->seq_slot = slot;
			b->seq_highest = highest;
			status = b->seq_status;
			if (!status && seq != b->slot_seq[slot] + 1 && seq != b->slot_seq[slot]) {
				status = NFS4ERR_SEQ_MISORDERED;
				b->misordered++;
			}
			xdr_put_u32(e, OP_CB_SEQUENCE);
			xdr_put_u32(e, status);
			nres++;
			if (!status) {
				b->slot_seq[slot] = seq;
				xdr_put_fixed(e, sid, sizeof(sid));
				xdr_put_u32(e, seq);
				xdr_put_u32(e, slot);
				xdr_put_u32(e, highest);
				xdr_put_u32(e, highest);
			}
		} else if (op == OP_CB_RECALL) {
			bool trunc;

			ck_assert_int_eq(nfs4_get_stateid(&d, &b->recall_sid), 0);
			ck_assert_int_eq(xdr_get_bool(&d, &trunc), 0);
			ck_assert_int_eq(nfs4_get_fh(&d, &b->recall_fh), 0);
			b->recalls++;
			status = b->recall_status;
			xdr_put_u32(e, OP_CB_RECALL);
			xdr_put_u32(e, status);
			nres++;
		} else if (op == OP_CB_GETATTR) {
			struct xdr_bitmap bm;
			uint32_t w;

			ck_assert_int_eq(nfs4_get_fh(&d, &b->getattr_fh), 0);
			ck_assert_int_eq(xdr_get_bitmap(&d, &bm), 0);
			b->getattr_req = bm.w[0];
			b->getattrs++;
			status = b->getattr_status;
			xdr_put_u32(e, OP_CB_GETATTR);
			xdr_put_u32(e, status);
			nres++;
			if (!status) {               /* fattr4: change, size (those asked for) */
				uint8_t v[16];
				uint32_t vl = 0;

				w = bm.w[0] & ((1u << 3) | (1u << 4));
				if (w & (1u << 3)) {
					xdr_store_u32(v + vl, (uint32_t)(b->getattr_change >> 32));
					xdr_store_u32(v + vl + 4, (uint32_t)b->getattr_change);
					vl += 8;
				}
				if (w & (1u << 4)) {
					xdr_store_u32(v + vl, (uint32_t)(b->getattr_size >> 32));
					xdr_store_u32(v + vl + 4, (uint32_t)b->getattr_size);
					vl += 8;
				}
				xdr_put_bitmap(e, &w, 1);
				xdr_put_opaque(e, v, vl);
			}
		} else {
			ck_abort_msg("unexpected callback operation %u", op);
		}
	}
	xdr_patch_u32(e, st_off, status);
	xdr_patch_u32(e, nres_off, nres);
out:
	xdr_patch_u32(e, 0, RPC_RM_LAST | (uint32_t)(e->len - 4));
	ck_assert_int_eq(e->err, 0);
}

static inline int ncb_send(struct nc *n, const void *buf, size_t len)
{
	struct ncb *b = n->cb;
	int r;

	pthread_mutex_lock(&b->wlock);
	r = trpc_send_record(n->fd, buf, len, 0);
	pthread_mutex_unlock(&b->wlock);
	return r;
}

/* The reply to @xid (5 s at most, as trpc_recv_record's timeout). */
static inline uint8_t *ncb_recv(struct nc *n, uint32_t xid, size_t *len)
{
	struct ncb *b = n->cb;
	uint64_t end = now_mono_ns() + 10000000000ull;
	struct ncb_rec **pp, *rr;
	uint8_t *buf = NULL;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		for (pp = &b->replies; *pp; pp = &(*pp)->next)
			if ((*pp)->len >= 4 && xdr_load_u32((*pp)->buf) == xid)
				break;
		if (*pp) {
			rr = *pp;
			*pp = rr->next;
			buf = rr->buf;
			*len = rr->len;
			free(rr);
			break;
		}
		if (b->eof || now_mono_ns() > end)
			break;
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&b->cond, &b->lock, &ts);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return buf;
}

static inline void *ncb_reader(void *arg)
{
	struct ncb *b = arg;
	struct nc *n = b->n;

	while (!atomic_load(&b->stop)) {
		struct pollfd p = { .fd = n->fd, .events = POLLIN };
		size_t len;
		int err;
		uint8_t *rec;

		/* look at `stop` every 100 ms; a record once begun is read whole */
		if (poll(&p, 1, 100) != 1)
			continue;
		rec = trpc_recv_record(n->fd, &len, &err);
		if (!rec) {
			pthread_mutex_lock(&b->lock);
			b->eof = true;
			pthread_cond_broadcast(&b->cond);
			pthread_mutex_unlock(&b->lock);
			break;
		}
		if (len >= 8 && xdr_load_u32(rec + 4) == RPC_REPLY) {
			struct ncb_rec *rr = calloc(1, sizeof(*rr));

			rr->buf = rec;
			rr->len = len;
			pthread_mutex_lock(&b->lock);
			rr->next = b->replies;
			b->replies = rr;
			pthread_cond_broadcast(&b->cond);
			pthread_mutex_unlock(&b->lock);
			continue;
		}
		{
			struct xdr_enc e;
			bool mute;

			xdr_enc_init(&e, 64 << 10);
			pthread_mutex_lock(&b->lock);
			ncb_answer_locked(b, rec, len, &e);
			mute = b->mute;
			pthread_cond_broadcast(&b->cond);
			pthread_mutex_unlock(&b->lock);
			if (!mute) {
				pthread_mutex_lock(&b->wlock);
				trpc_write_all(n->fd, e.buf, e.len);
				pthread_mutex_unlock(&b->wlock);
			}
			xdr_enc_free(&e);
			free(rec);
		}
	}
	return NULL;
}

/* Start answering callbacks on @n's connection. */
static inline struct ncb *ncb_attach(struct nc *n)
{
	struct ncb *b = calloc(1, sizeof(*b));

	ck_assert_ptr_nonnull(b);
	b->n = n;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_mutex_init(&b->wlock, NULL);
	n->cb = b;
	n->send_rec = ncb_send;
	n->recv_reply = ncb_recv;
	ck_assert_int_eq(pthread_create(&b->thr, NULL, ncb_reader, b), 0);
	return b;
}

/* Stop the reader (the connection stays open); keeps @b's counters readable. */
static inline void ncb_detach(struct ncb *b)
{
	struct ncb_rec *rr;

	if (!b)
		return;
	atomic_store(&b->stop, true);
	pthread_join(b->thr, NULL);
	b->n->send_rec = NULL;
	b->n->recv_reply = NULL;
	b->n->cb = NULL;
	while ((rr = b->replies)) {
		b->replies = rr->next;
		free(rr->buf);
		free(rr);
	}
}

static inline void ncb_free(struct ncb *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->wlock);
	free(b);
}

/* A counter of @b read under its lock. */
#define NCB_GET(b, field)                                    \
	({                                                   \
		pthread_mutex_lock(&(b)->lock);              \
		__typeof__((b)->field) _v = (b)->field;      \
		pthread_mutex_unlock(&(b)->lock);            \
		_v;                                          \
	})

/* ---- NFSv4.0: a callback server of the test's own ------------------------------ */

/* Listen on 127.0.0.1:0; the port in *@port. */
static inline int ncb40_listen(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Accept the gateway's connection if @cfd < 0 (within @secs), answer one call.  Returns the connection or -1. */
static inline int ncb40_serve_one(struct ncb *b, int lfd, int cfd, int secs)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	struct timeval tv = { .tv_sec = secs };
	struct xdr_enc e;
	uint8_t *rec;
	size_t len;

	if (cfd < 0) {
		if (poll(&p, 1, secs * 1000) != 1)
			return -1;
		cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			return -1;
		setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	rec = trpc_recv_record(cfd, &len, NULL);
	if (!rec) {
		close(cfd);
		return -1;
	}
	xdr_enc_init(&e, 64 << 10);
	pthread_mutex_lock(&b->lock);
	ncb_answer_locked(b, rec, len, &e);
	pthread_mutex_unlock(&b->lock);
	ck_assert_int_eq(trpc_write_all(cfd, e.buf, e.len), 0);
	xdr_enc_free(&e);
	free(rec);
	return cfd;
}

#endif
