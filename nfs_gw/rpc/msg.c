/*
 * msg.c - ONC RPC call headers and reply headers (RFC 5531 section 9).
 *
 * A call is: xid, CALL, rpcvers, prog, vers, proc, cred, verf, args.  We
 * accept AUTH_NONE and AUTH_SYS credentials with an AUTH_NONE verifier,
 * and RPCSEC_GSS ones (decoded here, checked by gss.c); any other flavour
 * is AUTH_BADCRED (as knfsd answers a flavour it has no
 * authenticator for), a malformed credential body is AUTH_BADCRED and a
 * bad verifier AUTH_BADVERF.  Everything is decoded with the bounded xdr.h
 * helpers, so this file is safe to feed raw network bytes (it is fuzzed by
 * tests/fuzz/fuzz_rpc_call.c).
 *
 * The other direction, for the calls the server makes itself (NFSv4
 * callbacks, clnt.c): rpc_call_begin() writes a call header with an
 * AUTH_NONE or AUTH_SYS credential, rpc_decode_reply() parses what comes
 * back (accepted with its results, or denied), just as boundedly.
 */
#include <errno.h>
#include <string.h>

#include "nfs_gw/rpc/rpc.h"

#define NOBODY 65534u

static int decode_authsys(const uint8_t *body, uint32_t len, struct rpc_cred *cr)
{
	struct xdr_dec d;
	uint32_t i;

	xdr_dec_init(&d, body, len);
	xdr_get_u32(&d, &cr->stamp);
	xdr_get_string(&d, cr->machine, sizeof(cr->machine), RPC_AUTHSYS_MAX_MACHINE);
	xdr_get_u32(&d, &cr->uid);
	xdr_get_u32(&d, &cr->gid);
	xdr_get_u32(&d, &cr->ngids);
	if (d.err || cr->ngids > RPC_AUTHSYS_MAX_GIDS)
		return -EBADMSG;
	for (i = 0; i < cr->ngids; i++)
		xdr_get_u32(&d, &cr->gids[i]);
	/* trailing bytes inside the credential body are malformed too */
	if (d.err || xdr_dec_left(&d))
		return -EBADMSG;
	return 0;
}

enum rpc_decode_result rpc_decode_call(const uint8_t *rec, size_t len, struct rpc_call *c,
				       enum rpc_auth_stat *auth_stat)
{
	struct xdr_dec d;
	uint32_t mtype, cflavor, vflavor, clen, vlen;
	const uint8_t *cbody, *vbody;

	memset(c, 0, sizeof(*c));
	*auth_stat = RPC_AUTH_OK;
	xdr_dec_init(&d, rec, len);
	if (xdr_get_u32(&d, &c->xid) || xdr_get_u32(&d, &mtype) || mtype != RPC_CALL)
		return RPC_DEC_UNPARSABLE;
	if (xdr_get_u32(&d, &c->rpcvers))
		return RPC_DEC_UNPARSABLE;
	if (c->rpcvers != RPC_VERSION)
		return RPC_DEC_RPC_MISMATCH;
	xdr_get_u32(&d, &c->prog);
	xdr_get_u32(&d, &c->vers);
	xdr_get_u32(&d, &c->proc);
	if (d.err)
		return RPC_DEC_UNPARSABLE;

	xdr_get_u32(&d, &cflavor);
	xdr_get_opaque(&d, &cbody, &clen, RPC_MAX_AUTH_BYTES);
	if (d.err) {
		*auth_stat = RPC_AUTH_BADCRED;
		return RPC_DEC_AUTH_ERROR;
	}
	xdr_get_u32(&d, &vflavor);
	xdr_get_opaque(&d, &vbody, &vlen, RPC_MAX_AUTH_BYTES);
	if (d.err) {
		*auth_stat = RPC_AUTH_BADVERF;
		return RPC_DEC_AUTH_ERROR;
	}
	c->verf_flavor = vflavor;
	c->cred.flavor = cflavor;
	switch (cflavor) {
	case RPC_AUTH_NONE:
		c->cred.uid = c->cred.gid = NOBODY;
		break;
	case RPC_AUTH_SYS:
		if (decode_authsys(cbody, clen, &c->cred)) {
			*auth_stat = RPC_AUTH_BADCRED;
			return RPC_DEC_AUTH_ERROR;
		}
		break;
	case RPCSEC_GSS:
		/* the header MIC of a DATA call covers xid .. end of the credential */
		c->gss.hdr_len = (size_t)(cbody + XDR_PAD(clen) - rec);
		if (rpc_gss_decode_cred(cbody, clen, &c->gss)) {
			*auth_stat = RPC_AUTH_BADCRED;
			return RPC_DEC_AUTH_ERROR;
		}
		c->cred.uid = c->cred.gid = NOBODY;   /* until gss.c maps the principal */
		c->cred.gss_service = c->gss.service;
		/* INIT and CONTINUE_INIT have an AUTH_NONE verifier, the others
		 * the header's MIC (checked by gss.c) */
		if (vflavor != (c->gss.proc == RPCSEC_GSS_INIT || c->gss.proc == RPCSEC_GSS_CONTINUE_INIT
					? (uint32_t)RPC_AUTH_NONE : (uint32_t)RPCSEC_GSS)) {
			*auth_stat = RPC_AUTH_BADVERF;
			return RPC_DEC_AUTH_ERROR;
		}
		c->gss.verf = vbody;
		c->gss.verf_len = vlen;
		c->args = d.p;
		c->args_len = xdr_dec_left(&d);
		return RPC_DEC_OK;
	default:
		*auth_stat = RPC_AUTH_BADCRED;
		return RPC_DEC_AUTH_ERROR;
	}
	if (vflavor != RPC_AUTH_NONE) {
		*auth_stat = RPC_AUTH_BADVERF;
		return RPC_DEC_AUTH_ERROR;
	}
	c->args = d.p;
	c->args_len = xdr_dec_left(&d);
	return RPC_DEC_OK;
}

void rpc_reply_begin(struct xdr_enc *e)
{
	xdr_reserve(e, RPC_RM_HDR);
}

static void reply_head(struct xdr_enc *e, uint32_t xid, enum rpc_reply_stat st)
{
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_REPLY);
	xdr_put_u32(e, st);
}

static void accepted_head(struct xdr_enc *e, uint32_t xid, enum rpc_accept_stat st)
{
	reply_head(e, xid, RPC_MSG_ACCEPTED);
	xdr_put_u32(e, RPC_AUTH_NONE);   /* verifier */
	xdr_put_u32(e, 0);
	xdr_put_u32(e, (uint32_t)st);
}

void rpc_reply_accepted(struct xdr_enc *e, uint32_t xid, enum rpc_accept_stat st)
{
	accepted_head(e, xid, st);
}

void rpc_reply_prog_mismatch(struct xdr_enc *e, uint32_t xid, uint32_t low, uint32_t high)
{
	accepted_head(e, xid, RPC_PROG_MISMATCH);
	xdr_put_u32(e, low);
	xdr_put_u32(e, high);
}

void rpc_reply_rpc_mismatch(struct xdr_enc *e, uint32_t xid)
{
	reply_head(e, xid, RPC_MSG_DENIED);
	xdr_put_u32(e, RPC_MISMATCH);
	xdr_put_u32(e, RPC_VERSION);
	xdr_put_u32(e, RPC_VERSION);
}

void rpc_reply_auth_error(struct xdr_enc *e, uint32_t xid, enum rpc_auth_stat why)
{
	reply_head(e, xid, RPC_MSG_DENIED);
	xdr_put_u32(e, RPC_AUTH_ERROR);
	xdr_put_u32(e, why);
}

int rpc_reply_end(struct xdr_enc *e)
{
	if (e->err)
		return e->err;
	if (e->len < RPC_RM_HDR)
		return -EINVAL;
	xdr_patch_u32(e, 0, RPC_RM_LAST | (uint32_t)(e->len - RPC_RM_HDR));
	return 0;
}

/* ---- calls the server makes (callbacks) ------------------------------------ */

void rpc_call_begin(struct xdr_enc *e, uint32_t xid, const struct rpc_call_hdr *h)
{
	xdr_reserve(e, RPC_RM_HDR);
	xdr_put_u32(e, xid);
	xdr_put_u32(e, RPC_CALL);
	xdr_put_u32(e, RPC_VERSION);
	xdr_put_u32(e, h->prog);
	xdr_put_u32(e, h->vers);
	xdr_put_u32(e, h->proc);
	if (h->flavor == RPC_AUTH_SYS) {
		size_t ml = strnlen(h->machine, RPC_AUTHSYS_MAX_MACHINE);

		xdr_put_u32(e, RPC_AUTH_SYS);
		/* stamp, machinename<255>, uid, gid, gids<16> (none) */
		xdr_put_u32(e, (uint32_t)(20 + XDR_PAD(ml)));
		xdr_put_u32(e, h->stamp);
		xdr_put_opaque(e, h->machine, (uint32_t)ml);
		xdr_put_u32(e, h->uid);
		xdr_put_u32(e, h->gid);
		xdr_put_u32(e, 0);
	} else {
		xdr_put_u32(e, RPC_AUTH_NONE);
		xdr_put_u32(e, 0);
	}
	xdr_put_u32(e, RPC_AUTH_NONE);   /* verifier */
	xdr_put_u32(e, 0);
}

int rpc_decode_reply(const uint8_t *rec, size_t len, struct rpc_reply *r)
{
	struct xdr_dec d;
	uint32_t mtype, vflavor, vlen;
	const uint8_t *v;

	memset(r, 0, sizeof(*r));
	xdr_dec_init(&d, rec, len);
	if (xdr_get_u32(&d, &r->xid) || xdr_get_u32(&d, &mtype) || mtype != RPC_REPLY ||
	    xdr_get_u32(&d, &r->reply_stat))
		return -EBADMSG;
	if (r->reply_stat == RPC_MSG_ACCEPTED) {
		if (xdr_get_u32(&d, &vflavor) || xdr_get_opaque(&d, &v, &vlen, RPC_MAX_AUTH_BYTES) ||
		    xdr_get_u32(&d, &r->stat))
			return -EBADMSG;
		r->verf_flavor = vflavor;
		r->verf = v;
		r->verf_len = vlen;
		if (r->stat == RPC_PROG_MISMATCH && (xdr_get_u32(&d, &r->low) || xdr_get_u32(&d, &r->high)))
			return -EBADMSG;
		r->res = d.p;
		r->res_len = xdr_dec_left(&d);
		return 0;
	}
	if (r->reply_stat != RPC_MSG_DENIED || xdr_get_u32(&d, &r->stat))
		return -EBADMSG;
	if (r->stat == RPC_MISMATCH)
		return xdr_get_u32(&d, &r->low) || xdr_get_u32(&d, &r->high) ? -EBADMSG : 0;
	if (r->stat == RPC_AUTH_ERROR)
		return xdr_get_u32(&d, &r->auth_stat) ? -EBADMSG : 0;
	return -EBADMSG;
}

int rpc_reply_errno(const struct rpc_reply *r)
{
	if (r->reply_stat == RPC_MSG_DENIED)
		return r->stat == RPC_AUTH_ERROR ? -EACCES : -EPROTONOSUPPORT;
	switch (r->stat) {
	case RPC_SUCCESS:
		return 0;
	case RPC_PROG_UNAVAIL:
	case RPC_PROG_MISMATCH:
		return -EPROTONOSUPPORT;
	case RPC_PROC_UNAVAIL:
		return -EOPNOTSUPP;
	case RPC_GARBAGE_ARGS:
		return -EINVAL;
	default:
		return -EIO;
	}
}
