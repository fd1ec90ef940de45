/*
 * nfs4_xdr.c - bounded encode/decode of the NFSv4 types several operations
 * share (see nfs4_xdr.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"

int nfs4_get_fh(struct xdr_dec *d, struct nfs4_fh *fh)
{
	return xdr_get_opaque_copy(d, fh->data, &fh->len, NFS4_FHSIZE);
}

int nfs4_put_fh(struct xdr_enc *e, const struct nfs4_fh *fh)
{
	return xdr_put_opaque(e, fh->data, fh->len);
}

int nfs4_get_stateid(struct xdr_dec *d, struct nfs4_stateid *s)
{
	xdr_get_u32(d, &s->seqid);
	return xdr_get_fixed(d, s->other, NFS4_OTHER_SIZE);
}

int nfs4_put_stateid(struct xdr_enc *e, const struct nfs4_stateid *s)
{
	xdr_put_u32(e, s->seqid);
	return xdr_put_fixed(e, s->other, NFS4_OTHER_SIZE);
}

int nfs4_get_channel_attrs(struct xdr_dec *d, struct nfs4_channel_attrs *a)
{
	memset(a, 0, sizeof(*a));
	xdr_get_u32(d, &a->headerpadsize);
	xdr_get_u32(d, &a->maxrequestsize);
	xdr_get_u32(d, &a->maxresponsesize);
	xdr_get_u32(d, &a->maxresponsesize_cached);
	xdr_get_u32(d, &a->maxoperations);
	xdr_get_u32(d, &a->maxrequests);
	xdr_get_u32(d, &a->nrdma_ird);
	if (!d->err && a->nrdma_ird > 1)
		d->err = -EBADMSG;
	if (a->nrdma_ird == 1)
		xdr_get_u32(d, &a->rdma_ird);
	return d->err;
}

int nfs4_put_channel_attrs(struct xdr_enc *e, const struct nfs4_channel_attrs *a)
{
	xdr_put_u32(e, a->headerpadsize);
	xdr_put_u32(e, a->maxrequestsize);
	xdr_put_u32(e, a->maxresponsesize);
	xdr_put_u32(e, a->maxresponsesize_cached);
	xdr_put_u32(e, a->maxoperations);
	xdr_put_u32(e, a->maxrequests);
	xdr_put_u32(e, a->nrdma_ird ? 1 : 0);
	if (a->nrdma_ird)
		xdr_put_u32(e, a->rdma_ird);
	return e->err;
}

int nfs4_get_time(struct xdr_dec *d, struct nfs4_time *t)
{
	xdr_get_i64(d, &t->seconds);
	xdr_get_u32(d, &t->nseconds);
	if (!d->err && t->nseconds >= 1000000000u)
		d->err = -EBADMSG;
	return d->err;
}

uint32_t nfs4_get_component(struct xdr_dec *d, char *buf, size_t bufsz)
{
	const uint8_t *p;
	uint32_t n;

	if (xdr_get_opaque(d, &p, &n, UINT32_MAX))
		return NFS4ERR_BADXDR;
	if (n == 0)
		return NFS4ERR_INVAL;
	if (n > NFS4_MAX_NAME || n >= bufsz)
		return NFS4ERR_NAMETOOLONG;
	if (memchr(p, '/', n) || memchr(p, 0, n))
		return NFS4ERR_BADNAME;
	if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return NFS4ERR_BADNAME;
	memcpy(buf, p, n);
	buf[n] = 0;
	return NFS4_OK;
}

const char *nfs4_op_name(uint32_t op)
{
	static __thread char other[24];
	const struct nfs4_op_desc *d = nfs4_op_lookup(op);

	if (d && d->name)
		return d->name;
	if (op == OP_ILLEGAL)
		return "ILLEGAL";
	snprintf(other, sizeof(other), "OP_%u", op);
	return other;
}

/* ---- CB_COMPOUND (RFC 8881 20.2, 20.9; RFC 7530 16.2) ---------------------- */

int nfs4_cb_put_compound(struct xdr_enc *e, const struct nfs4_cb_args *a)
{
	xdr_put_opaque(e, NULL, 0);                      /* tag */
	xdr_put_u32(e, a->minorversion);
	xdr_put_u32(e, a->ident);
	xdr_put_u32(e, (a->sequence ? 1u : 0u) + (a->recall ? 1u : 0u) + (a->getattr ? 1u : 0u));
	if (a->sequence) {
		xdr_put_u32(e, OP_CB_SEQUENCE);
		xdr_put_fixed(e, a->sessionid, NFS4_SESSIONID_SIZE);
		xdr_put_u32(e, a->seqid);
		xdr_put_u32(e, a->slotid);
		xdr_put_u32(e, a->highest_slotid);
		xdr_put_bool(e, false);                  /* csa_cachethis */
		xdr_put_u32(e, 0);                       /* csa_referring_call_lists */
	}
	if (a->recall) {
		xdr_put_u32(e, OP_CB_RECALL);
		nfs4_put_stateid(e, &a->stateid);
		xdr_put_bool(e, a->truncate);
		nfs4_put_fh(e, &a->fh);
	}
	if (a->getattr) {
		uint32_t w = a->getattr_mask;

		xdr_put_u32(e, OP_CB_GETATTR);
		nfs4_put_fh(e, &a->fh);
		xdr_put_bitmap(e, &w, 1);
	}
	return e->err;
}

/* CB_GETATTR4resok's fattr4: only the change and size, in that order, exactly */
static int get_cb_fattr(struct xdr_dec *d, struct nfs4_cb_res *r)
{
	struct xdr_bitmap bm;
	struct xdr_dec v;
	const uint8_t *vals;
	uint32_t vlen;

	if (xdr_get_bitmap(d, &bm) || xdr_get_opaque(d, &vals, &vlen, NFS4_OPAQUE_LIMIT))
		return -EBADMSG;
	if (bm.extra || (bm.nwords > 0 && (bm.w[0] & ~(NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE))))
		return -EBADMSG;
	for (uint32_t i = 1; i < bm.nwords && i < XDR_BITMAP_WORDS; i++)
		if (bm.w[i])
			return -EBADMSG;         /* an attribute we did not ask for, of unknown size */
	r->getattr_mask = bm.nwords ? bm.w[0] : 0;
	xdr_dec_init(&v, vals, vlen);
	if ((r->getattr_mask & NFS4_CB_GETATTR_CHANGE) && xdr_get_u64(&v, &r->change))
		return -EBADMSG;
	if ((r->getattr_mask & NFS4_CB_GETATTR_SIZE) && xdr_get_u64(&v, &r->size))
		return -EBADMSG;
	return xdr_dec_left(&v) ? -EBADMSG : 0;
}

int nfs4_cb_get_compound_res(const uint8_t *p, size_t len, struct nfs4_cb_res *r)
{
	struct xdr_dec d;
	const uint8_t *tag;
	uint32_t tl, op, st, i;

	memset(r, 0, sizeof(*r));
	xdr_dec_init(&d, p, len);
	if (xdr_get_u32(&d, &r->status) || xdr_get_opaque(&d, &tag, &tl, NFS4_OPAQUE_LIMIT) ||
	    xdr_get_u32(&d, &r->nres))
		return -EBADMSG;
	for (i = 0; i < r->nres && i < 2; i++) {
		if (xdr_get_u32(&d, &op) || xdr_get_u32(&d, &st))
			return -EBADMSG;
		if (op == OP_CB_SEQUENCE && i == 0) {
			r->has_seq = true;
			r->seq_status = st;
			if (st == NFS4_OK &&
			    (xdr_get_fixed(&d, r->sessionid, NFS4_SESSIONID_SIZE) || xdr_get_u32(&d, &r->seqid) ||
			     xdr_get_u32(&d, &r->slotid) || xdr_get_u32(&d, &r->highest_slotid) ||
			     xdr_get_u32(&d, &r->target_highest_slotid)))
				return -EBADMSG;
		} else if (op == OP_CB_RECALL && !r->has_recall) {
			r->has_recall = true;
			r->recall_status = st;
		} else if (op == OP_CB_GETATTR && !r->has_getattr) {   /* a second result of an op sent once: not ours */
			r->has_getattr = true;
			r->getattr_status = st;
			if (st == NFS4_OK && get_cb_fattr(&d, r))
				return -EBADMSG;
		} else {
			break;                           /* not one we sent: stop here */
		}
	}
	return 0;
}
